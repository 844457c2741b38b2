// In a real browser: a delivery that failed every attempt is a dead letter on the webhooks page, and
// its Redeliver button delivers it (the receiver gets the event; the attempt shows as HTTP 200). A
// URL disabled for failing every attempt is shown as such, and its Enable button enables it.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, test } from 'node:test';
import { axe, BROWSER, openEnv, skipNoBrowser, type Env } from './browser.ts';

// The receiver: refuses until told to accept, and records what it accepted.
let accepting = false;
const received: any[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    if (!accepting) return res.writeHead(500).end('not yet');
    received.push(JSON.parse(body));
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
after(() => receiver.close());
const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;

// Two attempts 20 ms apart, then the dead-letter list; a URL failing every attempt for about 1 s is disabled.
const e: Env | null = BROWSER ? await openEnv({ WEBHOOK_BACKOFF_MS: '20', WEBHOOK_DISABLE_AFTER_HOURS: '0.0003' }) : null;

// A receiver that fails every request.
const failing = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(500).end('down'));
});
await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
after(() => failing.close());
const failingUrl = `http://127.0.0.1:${(failing.address() as { port: number }).port}/down`;

async function until<T>(fn: () => Promise<T | undefined>, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('the redeliver button puts a dead letter back and it is delivered', skipNoBrowser, async () => {
  const { page } = e!;
  await page.goto(`${e!.base}/console#/webhooks`);
  await page.getByLabel('Register a URL').fill(hookUrl);
  await page.getByRole('button', { name: 'Register' }).click();
  await page.getByRole('listitem').filter({ hasText: hookUrl }).waitFor();

  const escrow = await e!.api('POST', '/v1/escrows', {
    amount: '3',
    asset: 'USDC',
    payer: { publicKey: 'a'.repeat(64) },
    payee: { publicKey: 'b'.repeat(64) },
    terms: { description: 'x', checks: [] },
  });
  const dead = await until(async () => (await e!.api('GET', '/v1/webhooks/dead-letters')).deadLetters[0], 'the dead letter');
  assert.equal(dead.event.escrowId, escrow.id);

  await page.reload();
  await page.getByTestId('redeliver').waitFor();
  // The page with attempts and a dead letter passes axe as the other views do.
  assert.deepEqual(await axe(page), []);
  // Both failed attempts are shown under Deliveries.
  assert.equal(await page.locator('ol.attempts li[data-outcome="retry"]').count(), 1);
  assert.equal(await page.locator('ol.attempts li[data-outcome="dead"]').count(), 1);

  accepting = true;
  await page.getByTestId('redeliver').click();
  await page
    .getByTestId('redeliver-status')
    .getByText(/Queued dlr_/)
    .waitFor();
  const got = await until(async () => received.find((b) => b.escrowId === escrow.id), 'the redelivered event');
  assert.equal(got.event, 'escrow.created');
  // The sender records an attempt in its tick's transaction, just after the receiver answered.
  await until(
    async () => (await e!.api('GET', `/v1/webhooks/attempts?escrowId=${escrow.id}`)).attempts.find((a: any) => a.outcome === 'delivered'),
    'the delivered attempt',
  );

  await page.reload();
  await page.getByTestId('no-dead-letters').waitFor();
  assert.match((await page.locator('ol.attempts li[data-outcome="delivered"]').first().textContent()) ?? '', /HTTP 200/);
  // The escrow page lists the same three attempts.
  await page.goto(`${e!.base}/console#/escrows/${escrow.id}`);
  await page.getByRole('heading', { name: 'Webhook attempts' }).waitFor();
  assert.equal(
    await page
      .locator('section', { has: page.getByRole('heading', { name: 'Webhook attempts' }) })
      .locator('tbody tr')
      .count(),
    3,
  );
  assert.deepEqual(e!.problems, []);
});

test('a disabled URL is shown with its reason, and its Enable button enables it', skipNoBrowser, async () => {
  const { page } = e!;
  accepting = true;
  await e!.api('POST', '/v1/webhooks', { url: hookUrl });
  await e!.api('POST', '/v1/webhooks', { url: failingUrl });
  const escrowBody = {
    amount: '3',
    asset: 'USDC',
    payer: { publicKey: 'a'.repeat(64) },
    payee: { publicKey: 'b'.repeat(64) },
    terms: { description: 'x', checks: [] },
  };
  const endpoint = async () =>
    ((await e!.api('GET', '/v1/webhooks')).endpoints as Array<Record<string, unknown>>).find((x) => x.url === failingUrl);
  await e!.api('POST', '/v1/escrows', escrowBody);
  await until(async () => ((await endpoint())?.failingSince ? true : undefined), 'the first failure');
  await new Promise((r) => setTimeout(r, 1_300));
  await e!.api('POST', '/v1/escrows', escrowBody);
  await until(async () => ((await endpoint())?.disabled ? true : undefined), 'the URL disabled');
  const notice = await until(async () => received.find((b) => b.event === 'webhook.disabled'), 'the webhook.disabled event');
  assert.equal(notice.data.url, failingUrl);

  await page.goto(`${e!.base}/console#/webhooks`);
  await page.reload();
  const item = page.locator('li[data-testid="endpoint"]', { hasText: failingUrl });
  await item.waitFor();
  assert.equal(await item.getAttribute('data-disabled'), 'true');
  assert.match((await item.textContent()) ?? '', /disabled since .*every attempt failed for 0\.0003 hours/);
  assert.deepEqual(await axe(page), []);
  await item.getByRole('button', { name: `Enable ${failingUrl} again` }).click();
  await page.locator('li[data-testid="endpoint"][data-disabled="false"]', { hasText: failingUrl }).waitFor();
  assert.equal((await endpoint())?.disabled, false);
  assert.deepEqual(e!.problems, []);
});
