// The console on a phone (390×844): no page is wider than the viewport (wide tables scroll inside
// their own box), the navigation stays reachable, and the refunded matter's custody and the proof's
// trail length say what they mean.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';

const e: Env | null = BROWSER ? await openEnv({ WEBHOOK_BACKOFF_MS: '20' }) : null;

test('at 390×844 no console page is wider than the viewport, and every nav link is on screen', skipNoBrowser, async () => {
  const { page } = e!;
  await page.setViewportSize({ width: 390, height: 844 });
  await e!.api('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook' });
  const settled = await lifecycle(e!, { pass: true });
  const disputed = await lifecycle(e!, { pass: false, dispute: true });
  const pages = ['escrows', `escrows/${settled.escrowId}`, `escrows/${disputed.escrowId}`, 'verify', 'log?start=0', 'webhooks', 'sandbox'];
  for (const p of pages) {
    await page.goto(`${e!.base}/console#/${p}`);
    await page.locator('main h1').first().waitFor();
    await page.waitForLoadState('networkidle');
    const width = await page.evaluate(() => document.scrollingElement!.scrollWidth);
    assert.ok(width <= 390, `#/${p} is ${width}px wide at a 390px viewport`);
    for (const name of ['Escrows', 'Log', 'Webhooks', 'Sandbox']) {
      const link = page.locator('header nav').getByRole('link', { name, exact: true });
      const box = await link.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `nav link ${name} is on screen on #/${p}`);
    }
  }
  assert.deepEqual(e!.problems, []);
});

test(
  'a matter refunded by timeout says custody returned the funds to the payer; the proof says which trail entries it covers',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    const refunded = await lifecycle(e!, { pass: false, dispute: true });
    await e!.api('POST', '/v1/sandbox/clock', { advanceSeconds: 4 * 86400 });
    await page.goto(`${e!.base}/console#/escrows/${refunded.escrowId}`);
    await page.getByTestId('escrow-state').filter({ hasText: 'resolved' }).waitFor({ timeout: 20_000 });
    const custody = (await page.getByTestId('custody').textContent()) ?? '';
    assert.match(custody, /returned to the payer/);
    assert.doesNotMatch(custody, /payee/);
    const trail = (await page.getByTestId('proof-trail').textContent()) ?? '';
    assert.match(trail, /before its proof\.issued entry/);
    assert.deepEqual(e!.problems, []);
  },
);

test('the sandbox clock says it only moves forward and how to start afresh', skipNoBrowser, async () => {
  const { page } = e!;
  await page.goto(`${e!.base}/console#/sandbox`);
  const text = (await page.getByTestId('clock-note').textContent()) ?? '';
  assert.match(text, /only moves forward/);
  assert.match(text, /DATA_DIR=:memory:/);
});
