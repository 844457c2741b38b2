// Screenshots of the console's main views from a real run, each shot waiting for its view's content.
// Only `npm run screenshots` writes them to docs/screenshots/ (SCREENSHOTS_DIR): a test run shoots into
// a temporary directory, so running the tests never rewrites the committed PNGs.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { ROOT } from '../process/proc.ts';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';

const OUT = process.env.SCREENSHOTS_DIR ? resolve(ROOT, process.env.SCREENSHOTS_DIR) : mkdtempSync(join(tmpdir(), 'console-shots-'));
if (!process.env.SCREENSHOTS_DIR) after(() => rmSync(OUT, { recursive: true, force: true }));
const failing = createServer((_req, res) => res.writeHead(503).end('down for maintenance'));
await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
after(() => failing.close());
const e: Env | null = BROWSER ? await openEnv({ WEBHOOK_BACKOFF_MS: '20' }) : null;

test('screenshots of the main views are taken (npm run screenshots: into docs/screenshots/)', skipNoBrowser, async () => {
  mkdirSync(OUT, { recursive: true });
  const { page } = e!;
  const shots: string[] = [];
  const shot = async (name: string, opts: { fullPage?: boolean } = {}) => {
    await page.waitForLoadState('networkidle');
    const path = `${OUT}/${name}.png`;
    await page.screenshot({ path, fullPage: opts.fullPage ?? false });
    shots.push(path);
  };
  await e!.api('POST', '/v1/webhooks', { url: `http://127.0.0.1:${(failing.address() as { port: number }).port}/hook` });
  for (let i = 0; i < 5; i++) await lifecycle(e!, { pass: true });
  await lifecycle(e!, { pass: false });

  // A demo matter from the sandbox page, its escrow page, and its proof verified in the browser.
  await page.goto(`${e!.base}/console#/sandbox`);
  await page.getByTestId('demo-settled').click();
  await page.getByTestId('escrow-state').filter({ hasText: 'settled' }).waitFor();
  await shot('console-escrow');
  await page.getByTestId('pin-keys').click();
  await page.getByTestId('verify-proof').click();
  await page.getByTestId('verdict').waitFor();
  await page.getByTestId('verdict').scrollIntoViewIfNeeded();
  await shot('console-proof-verified');

  await page.goto(`${e!.base}/console#/sandbox`);
  await page.getByTestId('demo-disputed').click();
  await page.getByTestId('escrow-state').filter({ hasText: 'disputed' }).waitFor();
  await page.getByRole('heading', { name: 'Dispute', exact: true }).scrollIntoViewIfNeeded();
  await shot('console-dispute');

  await page.goto(`${e!.base}/console#/escrows`);
  await page.locator('tbody tr').first().waitFor();
  await shot('console-escrows');

  // A tampered bundle on the standalone verify page.
  const proofId = (await e!.api('GET', '/v1/log/entries?start=0&end=1')).entries[0].proof.id;
  const bundle = JSON.stringify(await e!.api('GET', `/v1/proofs/${proofId}/bundle`), null, 2);
  await page.goto(`${e!.base}/console#/verify`);
  await page.getByLabel('Bundle (JSON)').fill(bundle.replace('"escrow.funded"', '"escrow.fundee"'));
  await page.getByTestId('verify-run').click();
  await page.getByTestId('verdict').scrollIntoViewIfNeeded();
  await shot('console-verify-tampered');

  await page.goto(`${e!.base}/console#/log?start=0`);
  await page.getByRole('button', { name: 'Show the inclusion path of leaf 2' }).click();
  await page.getByTestId('inclusion').scrollIntoViewIfNeeded();
  await shot('console-log-inclusion');

  await page.goto(`${e!.base}/console#/webhooks`);
  await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
  await shot('console-webhooks');

  await page.goto(`${e!.base}/console#/sandbox`);
  await page.getByRole('heading', { name: 'Clock' }).waitFor();
  await shot('console-sandbox');

  await page.goto(`${e!.base}/docs`);
  await shot('docs-api-reference');

  for (const p of shots) assert.ok(statSync(p).size > 10_000, `${p} is a real screenshot`);
  assert.deepEqual(e!.problems, []);
});
