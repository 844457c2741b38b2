// The Deno edge's keys (docs/keys.md), as the Node edge reads them: generated once into
// DATA_DIR/keys/ (0600) and read again at the next start, a rotation without a source written
// beside them and signing after a restart, named file: keys used as given, and a key file others
// may read refused at start with one line naming the variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config.ts';
import { formatNoteKey } from '../../src/crypto/keyText.ts';
import { NOT_USABLE } from '../../src/proof/keyFileRules.ts';
import { nodeKeySources } from '../../src/node/serviceKeys.ts';
import { DENO, NO_DENO, overHttp, ROOT as REPO, run, startService } from '../process/proc.ts';
import { HOSTED, ROOT } from '../admin/helpers.ts';
import { settled } from '../fixtures.ts';

const ORIGIN = parseConfig({}).logOrigin;
const DENO_ARGS = ['run', '-A', '--quiet', 'src/deno.ts'];
const startDeno = (env: Record<string, string>) => startService(DENO_ARGS, { DENO_NO_UPDATE_CHECK: '1', ...env }, 90_000, REPO, DENO);

/** The public key (hex) in a key file, read the Node edge's way. */
async function publicKeyOf(path: string): Promise<string> {
  const k = await nodeKeySources({ logOrigin: ORIGIN }).load(`file:${path}`, 'test');
  return Buffer.from(k.signer.publicKey).toString('hex');
}

test('under Deno: keys generated into DATA_DIR/keys once, a rotation without a source written beside them, both read again at the next start', {
  skip: NO_DENO,
  timeout: 240_000,
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'deno-keys-'));
  const keys = join(dataDir, 'keys');
  let s = await startDeno({ DATA_DIR: dataDir, ...HOSTED });
  let rotated: string;
  try {
    const h = overHttp(s.url, ROOT);
    const issuer = (await h.req('GET', '/health')).body.issuer;
    assert.equal(await publicKeyOf(join(keys, 'issuer.key')), issuer, 'the issuer is the generated file');
    for (const f of ['issuer.key', 'webhook.key']) assert.equal(statSync(join(keys, f)).mode & 0o777, 0o600, f);
    assert.equal(statSync(keys).mode & 0o777, 0o700);
    const before = await settled(h);
    assert.equal(before.proof.signature.signer, issuer);

    const rot = await h.req('POST', '/v1/admin/issuer/rotate');
    assert.equal(rot.status, 201, rot.text);
    const file = join(keys, `issuer-${rot.body.active.keyId}.key`);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    rotated = await publicKeyOf(file);
    assert.equal(rot.body.active.publicKey, rotated);
    assert.equal((await settled(h)).proof.signature.signer, rotated);
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
  // The same DATA_DIR again: the same files, and the rotated key signs (the active era, loaded from its source).
  s = await startDeno({ DATA_DIR: dataDir, ...HOSTED });
  try {
    const h = overHttp(s.url, ROOT);
    assert.equal((await h.req('GET', '/health')).body.issuer, rotated);
    assert.equal((await settled(h)).proof.signature.signer, rotated);
    assert.deepEqual(
      readdirSync(keys).sort(),
      ['issuer-' + (await h.req('GET', '/v1/log/head')).body.keyId + '.key', 'issuer.key', 'webhook.key'].sort(),
    );
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
});

test('under Deno: named file: keys sign as given, a rotation must name its key, and a key file others may read stops the start naming the variable', {
  skip: NO_DENO,
  timeout: 240_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'deno-named-'));
  const write = (name: string, keyName: string, mode = 0o600) => {
    const path = join(dir, name);
    writeFileSync(path, formatNoteKey(keyName, crypto.getRandomValues(new Uint8Array(32))), { mode });
    chmodSync(path, mode);
    return path;
  };
  const issuerFile = write('issuer.key', ORIGIN);
  const webhookFile = write('webhook.key', 'escrow-settlement-webhook');
  const named = { ISSUER_KEY: `file:${issuerFile}`, WEBHOOK_KEY: `file:${webhookFile}` };
  const s = await startDeno({ DATA_DIR: ':memory:', ...HOSTED, ...named });
  try {
    const h = overHttp(s.url, ROOT);
    const issuer = await publicKeyOf(issuerFile);
    assert.equal((await h.req('GET', '/health')).body.issuer, issuer);
    assert.equal((await settled(h)).proof.signature.signer, issuer);
    const rot = await h.req('POST', '/v1/admin/issuer/rotate');
    assert.equal(rot.status, 400, rot.text);
    assert.match(rot.body.error.message, /key is required: this service signs with named keys/);
    const next = write('issuer-next.key', ORIGIN);
    const ok = await h.req('POST', '/v1/admin/issuer/rotate', { key: `file:${next}` });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.active.publicKey, await publicKeyOf(next));
    // The key-file rules, as on the Node edge (docs/keys.md "Key files"): a request learns the rules, not which one a path broke.
    for (const p of [write('open-rot.key', ORIGIN, 0o644), join(dir, 'absent.key'), dir, '/etc/passwd']) {
      const bad = await h.req('POST', '/v1/admin/issuer/rotate', { key: `file:${p}` });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error.message, `key: ${p} ${NOT_USABLE}`);
    }
    const proc = await h.req('POST', '/v1/admin/issuer/rotate', { key: 'file:/proc/self/pagemap' });
    assert.equal(proc.status, 400, proc.text);
    assert.match(proc.body.error.message, /^key: \/proc\/self\/pagemap is under \/proc/);
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
  const open = write('open.key', ORIGIN, 0o644);
  const r = await run(
    DENO_ARGS,
    { DATA_DIR: ':memory:', DENO_NO_UPDATE_CHECK: '1', ISSUER_KEY: `file:${open}`, WEBHOOK_KEY: named.WEBHOOK_KEY },
    {
      exec: DENO,
    },
  );
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /bad configuration: ISSUER_KEY: .*open\.key has mode 0644: group or others may read it; chmod 600/);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
});
