// AP2_ISSUERS read at the Node edge: a JWKS file of P-256 public keys by kid; every bad file is one ConfigError naming the variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { ConfigError } from '../../src/config.ts';
import { loadAp2Issuers } from '../../src/node/ap2Files.ts';

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
