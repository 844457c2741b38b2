// The console is readable on a phone and says what happened without digging: at 390 px every table
// is a list of cards with `label: value` lines and no id or hash is broken inside; a failed verdict's
// failing checks are on the escrow page; a list re-reads itself after an action it offered; the
// page title names the page.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';

const e: Env | null = BROWSER ? await openEnv({ WEBHOOK_BACKOFF_MS: '20' }) : null;

test(
  'at 390 px tables are cards of label: value lines, and ids and hashes stay on one line, whole in the text',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    await page.setViewportSize({ width: 390, height: 844 });
    const settled = await lifecycle(e!, { pass: true });
    const disputed = await lifecycle(e!, { pass: false, dispute: true });
    for (const p of ['escrows', `escrows/${settled.escrowId}`, `escrows/${disputed.escrowId}`, 'log?start=0']) {
      await page.goto(`${e!.base}/console#/${p}`);
      await page.locator('main h1').first().waitFor();
      await page.waitForLoadState('networkidle');
      const r = await page.evaluate(() => {
        const cells = [...document.querySelectorAll<HTMLElement>('main table tbody td')];
        const heads = [...document.querySelectorAll<HTMLElement>('main table thead')];
        const tokens = [...document.querySelectorAll<HTMLElement>('main code.id, main code.hex')];
        return {
          cells: cells.length,
          blockCells: cells.filter((c) => getComputedStyle(c).display === 'block').length,
          labelled: cells.filter((c) => c.dataset.label && getComputedStyle(c, '::before').content.includes(c.dataset.label)).length,
          withLabel: cells.filter((c) => c.dataset.label).length,
          headsShown: heads.filter((t) => t.getBoundingClientRect().height > 2).length,
          // A token broken over lines is taller than one line of its own font.
          broken: tokens
            .filter((t) => t.getBoundingClientRect().height > parseFloat(getComputedStyle(t).fontSize) * 2)
            .map((t) => t.textContent),
          cut: tokens.filter((t) => t.title && t.textContent !== t.title).map((t) => t.textContent),
          tokens: tokens.length,
          wide: document.scrollingElement!.scrollWidth,
        };
      });
      assert.ok(r.cells > 0, `#/${p} has table cells`);
      assert.equal(r.blockCells, r.cells, `#/${p}: every cell is a line of its card`);
      assert.equal(r.labelled, r.withLabel, `#/${p}: every labelled cell shows its label`);
      assert.equal(r.headsShown, 0, `#/${p}: the column heads are not drawn (each cell carries its label)`);
      assert.ok(r.tokens > 0, `#/${p} shows ids or hashes`);
      assert.deepEqual(r.broken, [], `#/${p}: ids and hashes are never broken over lines`);
      assert.deepEqual(r.cut, [], `#/${p}: a shortened id or hash still holds its whole value (copying takes all of it)`);
      assert.ok(r.wide <= 390, `#/${p} is ${r.wide}px wide`);
    }
    // At a desktop width the same tables are tables.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${e!.base}/console#/escrows`);
    await page.locator('main table').waitFor();
    assert.equal(await page.evaluate(() => getComputedStyle(document.querySelector('main table td')!).display), 'table-cell');
    assert.deepEqual(e!.problems, []);
  },
);

test('a failed verdict names its failing checks on the escrow page; the title names the escrow', skipNoBrowser, async () => {
  const { page } = e!;
  const failed = await lifecycle(e!, { pass: false });
  await page.goto(`${e!.base}/console#/escrows/${failed.escrowId}`);
  const card = page.getByTestId('failed-checks');
  await card.waitFor();
  const text = (await card.textContent()) ?? '';
  assert.match(text, /1 check of 1 failed/);
  assert.match(text, /shape/);
  assert.match(text, /requiredFields/);
  assert.equal(await page.title(), `Escrow ${failed.escrowId} · Escrow settlement console`);
  const passed = await lifecycle(e!, { pass: true });
  await page.goto(`${e!.base}/console#/escrows/${passed.escrowId}`);
  await page.getByTestId('escrow-state').filter({ hasText: 'settled' }).waitFor();
  assert.equal(await page.getByTestId('failed-checks').count(), 0, 'no failing checks when the verdict passed');
  await page.goto(`${e!.base}/console#/nowhere`);
  await page.locator('main h1', { hasText: 'Not found' }).waitFor();
  assert.equal(await page.title(), 'Not found · Escrow settlement console');
  assert.deepEqual(e!.problems, []);
});

test('the sandbox list of matters awaiting a custody retry loses the row its Retry settled', skipNoBrowser, async () => {
  const { page } = e!;
  await e!.api('POST', '/v1/sandbox/custody/fail-next', { count: 1 });
  const stuck = await lifecycle(e!, { pass: true });
  const escrow = await e!.api('GET', `/v1/escrows/${stuck.escrowId}`);
  assert.equal(escrow.custody?.status, 'settle-failed');
  await page.goto(`${e!.base}/console#/sandbox`);
  const row = page.locator('main table tr', { hasText: stuck.escrowId });
  await row.waitFor();
  await row.getByRole('button', { name: 'Retry' }).click();
  await page
    .getByTestId('sandbox-status')
    .filter({ hasText: `Custody confirmed for ${stuck.escrowId}.` })
    .waitFor();
  assert.equal(await page.locator('main table tr', { hasText: stuck.escrowId }).count(), 0, 'the settled matter left the list');
  assert.deepEqual(e!.problems, []);
});
