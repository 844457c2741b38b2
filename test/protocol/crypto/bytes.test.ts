import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  concatBytes,
  fromBase64,
  fromHex,
  isHex64,
  timingSafeEqual,
  toBase64,
  toHex,
  utf8,
} from '@escrow-settlement/protocol/crypto/bytes';

test('hex encoding round-trips random bytes and matches Buffer', () => {
  for (const len of [0, 1, 2, 31, 32, 33, 255, 1024]) {
    const bytes = new Uint8Array(randomBytes(len));
    const hex = toHex(bytes);
    assert.equal(hex, Buffer.from(bytes).toString('hex'));
    assert.deepEqual(fromHex(hex), bytes);
    assert.deepEqual(fromHex(hex.toUpperCase()), bytes);
  }
});

test('fromHex names the argument when the length is odd', () => {
  assert.throws(
    () => fromHex('abc', 'publicKey'),
    (e: unknown) => e instanceof TypeError && /publicKey/.test(e.message),
  );
});

test('fromHex names the argument when a character is not hex', () => {
  assert.throws(
    () => fromHex('zz', 'signature'),
    (e: unknown) => e instanceof TypeError && /signature/.test(e.message),
  );
  assert.throws(
    () => fromHex('0x00', 'root'),
    (e: unknown) => e instanceof TypeError && /root/.test(e.message),
  );
  assert.throws(() => fromHex(' 00', 'root'), TypeError);
});

test('fromHex rejects a non-string with a TypeError naming the argument', () => {
  assert.throws(
    () => fromHex(42 as unknown as string, 'hash'),
    (e: unknown) => e instanceof TypeError && /hash/.test(e.message),
  );
});

test('utf8 encodes strings as UTF-8 like Buffer does', () => {
  for (const s of ['', 'abc', 'é', '€', '😀', 'a\u0000b']) {
    assert.deepEqual(utf8(s), new Uint8Array(Buffer.from(s, 'utf8')));
  }
});

test('concatBytes joins arrays in order', () => {
  assert.deepEqual(concatBytes(), new Uint8Array(0));
  assert.deepEqual(concatBytes(new Uint8Array([1, 2]), new Uint8Array(0), new Uint8Array([3])), new Uint8Array([1, 2, 3]));
});

test('base64 round-trips random bytes and matches Buffer in both directions', () => {
  for (let len = 0; len < 70; len++) {
    const bytes = new Uint8Array(randomBytes(len));
    const b64 = toBase64(bytes);
    assert.equal(b64, Buffer.from(bytes).toString('base64'));
    assert.deepEqual(fromBase64(b64), bytes);
  }
  const big = new Uint8Array(randomBytes(200_000));
  assert.equal(toBase64(big), Buffer.from(big).toString('base64'));
  assert.deepEqual(fromBase64(Buffer.from(big).toString('base64')), big);
});

test('fromBase64 refuses anything but standard padded base64, naming the argument', () => {
  for (const bad of ['a', 'ab', 'abc', 'ab=c', 'ab c', 'a-_b', '====', 'abcd=', 'YQ']) {
    assert.throws(
      () => fromBase64(bad, 'root'),
      (e: unknown) => e instanceof TypeError && /root/.test(e.message),
      bad,
    );
  }
});

test('isHex64 accepts exactly 64 lowercase hex characters', () => {
  assert.equal(isHex64('a'.repeat(64)), true);
  assert.equal(isHex64('0123456789abcdef'.repeat(4)), true);
  assert.equal(isHex64('A'.repeat(64)), false);
  assert.equal(isHex64('a'.repeat(63)), false);
  assert.equal(isHex64('a'.repeat(65)), false);
  assert.equal(isHex64('g'.repeat(64)), false);
  assert.equal(isHex64(`${'a'.repeat(64)}\n`), false);
  assert.equal(isHex64(null), false);
});

test('timingSafeEqual is true only for equal contents of equal length', () => {
  const a = new Uint8Array([1, 2, 3]);
  assert.equal(timingSafeEqual(a, new Uint8Array([1, 2, 3])), true);
  assert.equal(timingSafeEqual(a, new Uint8Array([1, 2, 4])), false);
  assert.equal(timingSafeEqual(a, new Uint8Array([1, 2])), false);
  assert.equal(timingSafeEqual(new Uint8Array(0), new Uint8Array(0)), true);
});
