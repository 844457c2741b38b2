// In a real browser: a delivery that failed every attempt is a dead letter on the webhooks page, and
// its Redeliver button delivers it (the receiver gets the event; the attempt shows as HTTP 200).
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

// Two attempts 20 ms apart, then the dead-letter list.
const e: Env | null = BROWSER ? await openEnv({ WEBHOOK_BACKOFF_MS: '20' }) : null;

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
