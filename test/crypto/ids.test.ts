import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { issuerKeyId, isId, newId } from '../../src/crypto/ids.ts';

const ID_RE = /^esc_[0-7][0-9a-hjkmnp-tv-z]{25}$/;

test('an id is the prefix, an underscore and a 26-char lowercase Crockford ULID', () => {
  const id = newId('esc');
  assert.match(id, ID_RE);
  assert.equal(isId('esc', id), true);
});

test('1000 ids generated in a loop sort in generation order and are distinct', () => {
  const ids = Array.from({ length: 1000 }, () => newId('prf'));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, 1000);
});

test('ids made in the same millisecond increment the randomness', () => {
  const a = newId('dlv', 1_700_000_000_000);
  const b = newId('dlv', 1_700_000_000_000);
  assert.equal(a.slice(0, 14), b.slice(0, 14));
  assert.ok(a < b);
  const last = (s: string) => '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(s.at(-1)!);
  assert.equal((last(a) + 1) % 32, last(b));
});

test('the timestamp part encodes the given milliseconds', () => {
  assert.equal(newId('agt', 0).slice(4, 14), '0000000000');
  assert.equal(newId('agt', 2 ** 48 - 1).slice(4, 14), '7zzzzzzzzz');
  // ULID spec example time 1469918176385 encodes as 01ARYZ6S41.
  assert.equal(newId('agt', 1469918176385).slice(4, 14), '01aryz6s41');
});

test('a later explicit time sorts after an earlier one', () => {
  assert.ok(newId('mnd', 1_000) < newId('mnd', 1_001));
});

test('a bad time or prefix is refused', () => {
  assert.throws(() => newId('esc', -1), RangeError);
  assert.throws(() => newId('esc', 2 ** 48), RangeError);
  assert.throws(() => newId('esc', 1.5), RangeError);
  assert.throws(() => newId('ESC'), TypeError);
  assert.throws(() => newId('es_c'), TypeError);
  assert.throws(() => newId(''), TypeError);
});

test('isId checks the prefix and the ULID body', () => {
  const id = newId('esc');
  assert.equal(isId('prf', id), false);
  assert.equal(isId('esc', id.toUpperCase()), false);
  assert.equal(isId('esc', `${id}0`), false);
  assert.equal(isId('esc', id.slice(0, -1)), false);
  assert.equal(isId('esc', `esc_8${id.slice(5)}`), false);
  assert.equal(isId('esc', `esc_0${id.slice(5, -1)}u`), false);
  assert.equal(isId('esc', 42), false);
  assert.equal(isId('esc', `x${id}`), false);
});

test('issuerKeyId is iss_ plus the first 16 hex chars of sha256 of the public key', () => {
  const pk = new Uint8Array(32).fill(7);
  const expected = `iss_${createHash('sha256').update(pk).digest('hex').slice(0, 16)}`;
  assert.equal(issuerKeyId(pk), expected);
  assert.match(issuerKeyId(pk), /^iss_[0-9a-f]{16}$/);
  assert.throws(() => issuerKeyId(new Uint8Array(31)), TypeError);
});
