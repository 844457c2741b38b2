// Private key texts: the signed-note private key and the Ed25519 PKCS#8 PEM (src/crypto/keyText.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { formatVerifierKey } from '@escrow-settlement/protocol/tlog/checkpoint';
import { formatNoteKey, formatPkcs8Pem, parseKeyText } from '../../src/crypto/keyText.ts';

describe('key texts', () => {
  it('a signed-note private key round-trips, and its key id is the verifier key id', () => {
    const kp = generateKeyPair();
    const text = formatNoteKey('example.com/log', kp.secretKey);
    const vkey = formatVerifierKey('example.com/log', kp.publicKey);
    assert.equal(text.split('+')[3], vkey.split('+')[1]);
    const parsed = parseKeyText(text);
    assert.equal(parsed.format, 'signed-note');
    assert.equal(parsed.name, 'example.com/log');
    assert.equal(toHex(parsed.seed), toHex(kp.secretKey));
  });

  it('a PKCS#8 PEM round-trips and reads what openssl genpkey writes', () => {
    const kp = generateKeyPair();
    assert.equal(toHex(parseKeyText(formatPkcs8Pem(kp.secretKey)).seed), toHex(kp.secretKey));
    const dir = mkdtempSync(join(tmpdir(), 'pem-'));
    try {
      const path = join(dir, 'k.pem');
      execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', path]);
      const der = execFileSync('openssl', ['pkey', '-in', path, '-outform', 'DER']);
      const parsed = parseKeyText(readFileSync(path, 'utf8'));
      assert.equal(parsed.format, 'pkcs8');
      assert.equal(toHex(parsed.seed), der.subarray(16).toString('hex'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what is not a key, saying why and never echoing the key', () => {
    const kp = generateKeyPair();
    const good = formatNoteKey('n', kp.secretKey).trim();
    // base64 may hold '+': the key is everything after the fourth.
    const [, , name, id, ...rest] = good.split('+');
    const b64 = rest.join('+');
    const cases: Array<[string, RegExp]> = [
      ['hello', /neither a signed-note private key/],
      ['PRIVATE+KEY+n', /expected PRIVATE\+KEY\+<name>\+<key id>\+<key>/],
      [`PRIVATE+KEY+${name}+XYZ+${b64}`, /8 lowercase hex/],
      [`PRIVATE+KEY+${name}+${id}+not!base64`, /not base64/],
      [`PRIVATE+KEY+other+${id}+${b64}`, /has key id .* but the key's id is/],
      [`PRIVATE+KEY+${name}+${id}+${Buffer.from([4, ...kp.secretKey]).toString('base64')}`, /not an Ed25519 key/],
      ['-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', /not Ed25519/],
      ['-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n', /is not a PKCS#8 PEM/],
    ];
    for (const [text, why] of cases) {
      assert.throws(
        () => parseKeyText(text),
        (e: Error) => {
          assert.match(e.message, why, text);
          assert.ok(!e.message.includes(b64) && !e.message.includes(toHex(kp.secretKey)));
          return true;
        },
      );
    }
  });
});
