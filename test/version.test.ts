// One version (docs/protocol.md §23): the service, /health, /docs, the OpenAPI document, the client
// package, the protocol package and the `escrow-settlement` command report the same one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Harness, makeHarness } from './harness.ts';
import { VERSION } from '../src/version.ts';

const json = (rel: string) => JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'));
const root = json('../package.json');
const client = json('../packages/client/package.json');
const protocol = json('../packages/protocol/package.json');
const lock = json('../package-lock.json');

let h: Harness;
before(async () => {
  h = await makeHarness('pglite');
});
after(async () => {
  await h?.close();
});

test('the service, its packages, the lockfile and the dependency pins carry one version', () => {
  assert.match(root.version, /^\d+\.\d+\.\d+$/);
  assert.equal(VERSION, root.version);
  assert.equal(client.version, root.version, 'packages/client');
  assert.equal(protocol.version, root.version, 'packages/protocol');
  assert.equal(root.dependencies['@escrow-settlement/client'], root.version);
  assert.equal(root.dependencies['@escrow-settlement/protocol'], root.version);
  assert.equal(client.dependencies['@escrow-settlement/protocol'], root.version);
  assert.equal(lock.version, root.version);
  assert.equal(lock.packages[''].version, root.version);
  assert.equal(lock.packages['packages/client'].version, root.version);
  assert.equal(lock.packages['packages/protocol'].version, root.version);
});

test('/health, /docs and the OpenAPI document report that version', async () => {
  const health = await h.req('GET', '/health');
  assert.equal(health.status, 200);
  assert.equal(health.body.version, root.version);
  const doc = await h.req('GET', '/v1/openapi.json');
  assert.equal(doc.status, 200);
  assert.equal(doc.body.info.version, root.version);
  const docs = await h.req('GET', '/docs');
  assert.equal(docs.status, 200);
  assert.ok(docs.text.includes(root.version), '/docs names the version');
});

test('the escrow-settlement command reports that version', () => {
  const bin = fileURLToPath(new URL('../bin/escrow-settlement.mjs', import.meta.url));
  const r = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `escrow-settlement ${root.version} (@escrow-settlement/client)\n`);
});
