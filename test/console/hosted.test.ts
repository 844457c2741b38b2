// In a real browser, hosted mode: `/` is a landing page; the console shows nothing without a key,
// refuses a wrong one, and keeps a good one in sessionStorage only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { axe, BROWSER, openEnv, skipNoBrowser, type Env } from './browser.ts';

const KEY = 'console-hosted-root-key-0123456789';
const e: Env | null = BROWSER ? await openEnv({ API_KEY: KEY }) : null;

test('hosted `/` is a landing page linking the console, the API reference and the OpenAPI document', skipNoBrowser, async () => {
  const { page } = e!;
  await page.goto(`${e!.base}/`);
  assert.equal(new URL(page.url()).pathname, '/');
  for (const [name, href] of [
    ['Console', '/console'],
    ['API reference', '/docs'],
    ['OpenAPI document', '/v1/openapi.json'],
  ]) {
    assert.equal(await page.getByRole('link', { name, exact: true }).getAttribute('href'), href);
  }
  assert.deepEqual(await axe(page), []);
});

test(
  'the hosted console refuses without a key: no data, no API call, a wrong key is refused, a good one is kept for the tab only',
  skipNoBrowser,
  async () => {
    const { page } = e!;
    await e!.api(
      'POST',
      '/v1/escrows',
      {
        amount: '1',
        asset: 'USDC',
        payer: { publicKey: 'a'.repeat(64) },
        payee: { publicKey: 'b'.repeat(64) },
        terms: { description: 'x', checks: [] },
      },
      KEY,
    );
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/v1/')) apiCalls.push(r.url());
    });
    await page.goto(`${e!.base}/console#/escrows`);
    await page.getByTestId('key-gate').waitFor();
    assert.equal(await page.locator('table').count(), 0);
    assert.deepEqual(await axe(page), []);
    assert.deepEqual(apiCalls, []);
    // Sandbox controls do not exist in hosted mode.
    assert.equal(await page.getByRole('link', { name: 'Sandbox' }).count(), 0);
    // Offline verification needs no key: the verify page opens without one. Its one call is the public
    // witness list (the keys its cosignature check uses), which needs no key either.
    await page.getByRole('link', { name: 'Offline verification' }).click();
    await page.getByLabel('Bundle (JSON)').waitFor();
    assert.deepEqual(
      apiCalls.map((u) => new URL(u).pathname),
      ['/v1/log/witnesses'],
    );
    apiCalls.length = 0;
    await page.getByRole('link', { name: 'Escrows' }).click();
    await page.getByTestId('key-gate').waitFor();

    await page.getByLabel('API key').fill('wrong-key');
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByTestId('key-error').getByText('That key was refused (401 unauthorized).').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);

    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.locator('tbody tr').first().waitFor();
    assert.equal(await page.locator('tbody tr').count(), 1);
    assert.deepEqual(await page.evaluate(() => [sessionStorage.getItem('escrow-console.key'), localStorage.length, document.cookie]), [
      KEY,
      0,
      '',
    ]);
    assert.deepEqual(e!.problems, []);
  },
);
