// In a real browser: advancing the sandbox clock from the console closes a timed-out dispute, and
// the escrow page shows it (resolved by timeout, nobody signed) without a reload.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';

const e: Env | null = BROWSER ? await openEnv() : null;

test('advancing the clock past the decide deadline closes the dispute on screen', skipNoBrowser, async () => {
  const { escrowId } = await lifecycle(e!, { pass: false, dispute: true });
  const { page } = e!;
  await page.goto(`${e!.base}/console#/escrows/${escrowId}`);
  await page.getByTestId('escrow-state').filter({ hasText: 'disputed' }).waitFor();
  assert.equal(await page.getByTestId('dispute-state').textContent(), 'open');

  await page.getByRole('link', { name: 'Sandbox' }).click();
  await page.getByLabel('Advance by').fill('4');
  await page.getByLabel('Unit').selectOption('days');
  await page.getByTestId('advance').click();
  await page
    .getByTestId('sandbox-status')
    .getByText(/Clock advanced by 4 days/)
    .waitFor();
  // The sandbox page's deadline table watches it close too.
  const row = page.locator('tr', { has: page.getByRole('link', { name: escrowId }) });
  await row.getByTestId('deadline-state').filter({ hasText: 'resolved' }).waitFor({ timeout: 20_000 });
  assert.match((await row.textContent()) ?? '', /closed/);
  await page.goBack();

  // The sweep closes it within a second or so; the page polls and redraws.
  await page.getByTestId('escrow-state').filter({ hasText: 'resolved' }).waitFor({ timeout: 20_000 });
  assert.equal(await page.getByTestId('dispute-state').textContent(), 'resolved');
  const ruling = await page.getByTestId('ruling').textContent();
  assert.match(ruling ?? '', /Decided bytimeout/);
  assert.match(ruling ?? '', /nobody: the deadline passed in silence/);
  assert.equal(await page.getByTestId('path-taken').textContent(), 'created → funded → delivered → disputed → resolved');
  assert.equal(await page.getByTestId('proof-outcome').textContent(), 'refunded');
  assert.deepEqual(e!.problems, []);
});

test('custody faults: the next settlement fails, the escrow waits, and the retry button settles it', skipNoBrowser, async () => {
  const { page } = e!;
  await page.goto(`${e!.base}/console#/sandbox`);
  await page.getByLabel('Make the next settlements fail').fill('1');
  await page.getByTestId('fail-next').click();
  await page.getByTestId('sandbox-status').getByText('The next 1 settlement attempts will fail.').waitFor();
  const { escrowId } = await lifecycle(e!, { pass: true });
  await page.goto(`${e!.base}/console#/escrows/${escrowId}`);
  await page.getByText('The last settlement attempt failed').waitFor();
  await page.getByRole('button', { name: 'Retry custody settlement' }).click();
  await page.getByTestId('escrow-state').filter({ hasText: 'settled' }).waitFor();
  assert.deepEqual(e!.problems, []);
});
