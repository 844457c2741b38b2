// In a real browser, with the service submitting to two test witnesses over HTTP (Ed25519 and
// ML-DSA-44): the log page shows each witness and the size it last cosigned, and in-page verification
// lists each cosignature with its signature scheme.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { BROWSER, lifecycle, openEnv, skipNoBrowser, type Env } from './browser.ts';
import { createTestWitness } from '../witness/witness.ts';

const witness = createTestWitness('w1.console.test');
const pq = createTestWitness('pq.console.test', [], 'mldsa44');
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    const answer = await (req.url?.startsWith('/pq/') ? pq : witness).fetch(
      new Request(`http://127.0.0.1${req.url}`, { method: req.method, body: req.method === 'POST' ? Buffer.concat(chunks) : undefined }),
    );
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
after(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);
const port = (server.address() as AddressInfo).port;

const e: Env | null = BROWSER
  ? await openEnv({
      WITNESSES: `${witness.vkey}=http://127.0.0.1:${port}/ed,${pq.vkey}=http://127.0.0.1:${port}/pq`,
      WITNESS_INTERVAL_MS: '100',
    })
  : null;
if (e) for (const w of [witness, pq]) w.trust((await e.api('GET', '/.well-known/proof-issuer.json')).keys.at(-1).vkey);

async function cosigned(min: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { witnesses } = await e!.api('GET', '/v1/log/witnesses');
    if (witnesses.every((w: { cosignedSize: number | null }) => (w.cosignedSize ?? 0) >= min)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the witness never cosigned');
}

test('the log page shows each witness with the size it last cosigned', skipNoBrowser, async () => {
  await lifecycle(e!, { pass: true });
  await cosigned(1);
  const { page } = e!;
  await page.goto(`${e!.base}/console#/log`);
  await page.getByTestId('witnesses').waitFor();
  assert.deepEqual(await page.locator('[data-witness]').allTextContents(), ['w1.console.test', 'pq.console.test']);
  assert.equal(await page.getByTestId('cosigned-w1.console.test').textContent(), '1');
  assert.equal(await page.getByTestId('cosigned-pq.console.test').textContent(), '1');
  assert.match(
    (await page.locator('pre').first().textContent()) ?? '',
    /\n— w1\.console\.test /,
    'the served checkpoint carries the cosignature line',
  );
  assert.deepEqual(e!.problems, []);
});

test('verifying a bundle in the page lists each cosignature of its checkpoint', skipNoBrowser, async () => {
  const { proofId } = await lifecycle(e!, { pass: true });
  await cosigned(2);
  const bundle = await e!.api('GET', `/v1/proofs/${proofId}/bundle`);
  const { page } = e!;
  await page.goto(`${e!.base}/console#/verify`);
  await page.getByRole('heading', { name: /Verify a settlement proof/ }).waitFor();
  if (await page.getByTestId('pin-keys').count()) await page.getByTestId('pin-keys').click();
  await page.getByText('Pinned issuer key').waitFor();
  await page.getByLabel('Bundle (JSON)').fill(JSON.stringify(bundle));
  await page.getByTestId('verify-run').click();
  await page.getByTestId('verdict').waitFor();
  assert.match((await page.getByTestId('verdict').textContent()) ?? '', /^Valid: all \d+ checks pass/);
  const list = page.getByTestId('cosignatures');
  await list.waitFor();
  assert.equal(await list.locator('[data-cosigner]').count(), 2);
  const rows = await list.locator('tbody tr').allTextContents();
  assert.match(rows[0], /w1\.console\.test.*Ed25519.*verifies under its published key/);
  assert.match(rows[1], /pq\.console\.test.*ML-DSA-44.*verifies under its published key/);
  assert.equal(await page.locator('[data-check="checkpoint.inclusion"].ok').count(), 1);
  assert.deepEqual(e!.problems, []);
});
