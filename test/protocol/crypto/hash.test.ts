import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { hashJson, sha256, sha256Hex } from '@escrow-settlement/protocol/crypto/hash';

test('sha256 of the empty string is the RFC 6962 empty-log root', () => {
  assert.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(sha256Hex(new Uint8Array(0)), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
});

test('sha256 of "abc" matches the FIPS 180-2 example', () => {
  assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});

test('a string is hashed as its UTF-8 bytes, agreeing with node:crypto', () => {
  for (const s of ['é', '😀 escrow', 'a'.repeat(1000)]) {
    assert.equal(sha256Hex(s), createHash('sha256').update(s, 'utf8').digest('hex'));
    assert.deepEqual(sha256(s), new Uint8Array(createHash('sha256').update(s, 'utf8').digest()));
  }
});

test('hashJson hashes the canonical form, so key order does not matter', () => {
  const expected = createHash('sha256').update('{"a":1,"b":[true,null]}').digest('hex');
  assert.equal(hashJson({ b: [true, null], a: 1 }), expected);
  assert.equal(hashJson({ a: 1, b: [true, null] }), expected);
});

test('sha256 refuses input that is neither bytes nor a string', () => {
  assert.throws(() => sha256(42 as unknown as string), TypeError);
});
