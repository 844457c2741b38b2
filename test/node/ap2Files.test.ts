// AP2_ISSUERS and AP2_RECEIPT_KEY read at the Node edge: every bad file is one ConfigError naming its variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { parseConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { loadAp2Issuers, loadAp2ReceiptKey } from '../../src/node/ap2Files.ts';

const dir = mkdtempSync(join(tmpdir(), 'ap2-issuers-'));
const jwk = (kid: string, priv = false) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...(priv ? privateKey : publicKey).export({ format: 'jwk' }), kid };
};
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return `file:${p}`;
};

test('a JWKS of P-256 keys loads as points by kid', () => {
  const issuers = loadAp2Issuers(file('ok.json', JSON.stringify({ keys: [jwk('a'), jwk('b')] })));
  assert.deepEqual([...issuers.keys()], ['a', 'b']);
  assert.equal(issuers.get('a')?.length, 65);
});

test('a missing file, non-JSON, a private key, a duplicate kid, another curve: ConfigError naming AP2_ISSUERS', () => {
  const ed = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
  for (const [source, why] of [
    [`file:${join(dir, 'absent.json')}`, /cannot read/],
    [file('text.json', 'not json'), /not JSON/],
    [file('priv.json', JSON.stringify({ keys: [jwk('a', true)] })), /private key/],
    [file('dup.json', JSON.stringify({ keys: [jwk('a'), jwk('a')] })), /listed twice/],
    [file('ed.json', JSON.stringify({ keys: [{ ...ed, kid: 'e' }] })), /P-256/],
    [file('nokid.json', JSON.stringify({ keys: [{ ...jwk('a'), kid: undefined }] })), /kid/],
    [file('empty.json', JSON.stringify({ keys: [] })), /no key/],
  ] as const) {
    assert.throws(
      () => loadAp2Issuers(source),
      (e: unknown) => e instanceof ConfigError && e.variable === 'AP2_ISSUERS' && why.test(e.message),
      source,
    );
  }
});

test('AP2_RECEIPT_KEY: a 0600 JWK or PEM file loads; a file others may read, or whose x/y are not its d, is refused naming the variable', () => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwkText = JSON.stringify(privateKey.export({ format: 'jwk' }));
  const d = new Uint8Array(Buffer.from((privateKey.export({ format: 'jwk' }) as { d: string }).d, 'base64url'));
  const secret = (name: string, text: string, mode = 0o600) => {
    const p = join(dir, name);
    writeFileSync(p, text, { mode });
    chmodSync(p, mode);
    return `file:${p}`;
  };
  const load = (source: string) => loadAp2ReceiptKey(parseConfig({ DATA_DIR: ':memory:', AP2_RECEIPT_KEY: source }), {});
  assert.deepEqual(load(secret('r.jwk', jwkText)).secret, d);
  assert.deepEqual(load(secret('r.pem', privateKey.export({ format: 'pem', type: 'pkcs8' }) as string)).secret, d);
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }) as { x: string };
  for (const [source, why] of [
    [secret('open.jwk', jwkText, 0o644), /group or others|chmod/],
    [secret('mixed.jwk', JSON.stringify({ ...JSON.parse(jwkText), x: other.x })), /not a valid|not the one/],
    [secret('pub.jwk', JSON.stringify(jwk('p'))), /private key/],
  ] as const) {
    assert.throws(
      () => load(source),
      (e: unknown) => e instanceof ConfigError && e.variable === 'AP2_RECEIPT_KEY' && why.test(e.message),
      source,
    );
  }
});

test('without AP2_RECEIPT_KEY: generated once into DATA_DIR/keys (0600) and reused; :memory: keeps one in memory; DATABASE_URL without DATA_DIR refuses', () => {
  const dataDir = join(dir, 'data');
  const first = loadAp2ReceiptKey(parseConfig({ DATA_DIR: dataDir }), { DATA_DIR: dataDir });
  assert.ok(first.generated);
  assert.equal(statSync(first.generated!).mode & 0o777, 0o600);
  const again = loadAp2ReceiptKey(parseConfig({ DATA_DIR: dataDir }), { DATA_DIR: dataDir });
  assert.equal(again.generated, undefined);
  assert.deepEqual(again.secret, first.secret);
  assert.equal(loadAp2ReceiptKey(parseConfig({ DATA_DIR: ':memory:' }), {}).secret.length, 32);
  assert.throws(
    () => loadAp2ReceiptKey(parseConfig({ DATABASE_URL: 'postgres://db/x' }), { DATABASE_URL: 'postgres://db/x' }),
    (e: unknown) => e instanceof ConfigError && e.variable === 'AP2_RECEIPT_KEY' && /AP2_RECEIPT_KEY=file:/.test(e.message),
  );
});
