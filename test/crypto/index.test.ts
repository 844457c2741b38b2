import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as cryptoModule from '../../src/crypto/index.ts';

test('the index re-exports every crypto function', () => {
  const expected = [
    'toHex',
    'fromHex',
    'utf8',
    'concatBytes',
    'toBase64',
    'fromBase64',
    'isHex64',
    'timingSafeEqual',
    'canonicalize',
    'canonicalBytes',
    'sha256',
    'sha256Hex',
    'hashJson',
    'generateKeyPair',
    'publicKeyOf',
    'sign',
    'verify',
    'signHex',
    'verifyHex',
    'signJson',
    'verifyJson',
    'newId',
    'isId',
    'issuerKeyId',
  ];
  for (const name of expected) {
    assert.equal(typeof (cryptoModule as Record<string, unknown>)[name], 'function', name);
  }
});
