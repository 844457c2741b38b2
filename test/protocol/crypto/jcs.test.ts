import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { canonicalBytes, canonicalize } from '@escrow-settlement/protocol/crypto/jcs';

const VECTORS = new URL('../../vectors/', import.meta.url);
const CYBERPHONE = new URL('cyberphone-json-canonicalization/testdata/', VECTORS);

function bitsToNumber(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

test('the published vectors are vendored inside the repository (test/vectors), not beside it', () => {
  // A fresh clone has no sibling directories: the vectors must resolve under the repository root.
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  assert.ok(fileURLToPath(VECTORS).startsWith(root), `${fileURLToPath(VECTORS)} is outside ${root}`);
  assert.ok(existsSync(new URL('README.md', VECTORS)), `no vectors at ${fileURLToPath(VECTORS)}`);
});

test('every cyberphone input canonicalizes to the exact output bytes and outhex', () => {
  const names = readdirSync(new URL('input/', CYBERPHONE))
    .filter((n) => n.endsWith('.json'))
    .sort();
  assert.deepEqual(names, ['arrays.json', 'french.json', 'structures.json', 'unicode.json', 'values.json', 'weird.json']);
  for (const name of names) {
    const input = JSON.parse(readFileSync(new URL(`input/${name}`, CYBERPHONE), 'utf8'));
    const expected = new Uint8Array(readFileSync(new URL(`output/${name}`, CYBERPHONE)));
    const actual = canonicalBytes(input);
    assert.deepEqual(actual, expected, name);
    assert.equal(canonicalize(input), new TextDecoder().decode(expected), name);
    const outhex = readFileSync(new URL(`outhex/${name.replace(/\.json$/, '.txt')}`, CYBERPHONE), 'utf8');
    const hexBytes = new Uint8Array(
      outhex
        .trim()
        .split(/\s+/)
        .map((h) => parseInt(h, 16)),
    );
    assert.deepEqual(actual, hexBytes, `${name} outhex`);
  }
});

test('the es6 numbers file matches its published SHA-256 and every line canonicalizes as expected', () => {
  const raw = readFileSync(new URL('cyberphone-json-canonicalization/es6numbers/es6testfile10k.txt', VECTORS));
  assert.equal(raw.length, 399_022);
  assert.equal(createHash('sha256').update(raw).digest('hex'), 'b9f7a8e75ef22a835685a52ccba7f7d6bdc99e34b010992cbc5864cd12be6892');
  const lines = raw.toString('utf8').split('\n');
  assert.equal(lines.pop(), '');
  assert.equal(lines.length, 10_000);
  for (const line of lines) {
    const comma = line.indexOf(',');
    const hex = line.slice(0, comma).padStart(16, '0');
    const expected = line.slice(comma + 1);
    assert.equal(canonicalize(bitsToNumber(hex)), expected, line);
  }
});

test('RFC 8785 Appendix B numbers serialize as published and NaN/Infinity throw', () => {
  const doc = JSON.parse(readFileSync(new URL('rfc8785/appendix-b-numbers.json', VECTORS), 'utf8')) as {
    samples: { ieeeHex: string; jcs: string | null }[];
  };
  assert.ok(doc.samples.length >= 20);
  let failures = 0;
  for (const row of doc.samples) {
    const n = bitsToNumber(row.ieeeHex);
    if (row.jcs === null) {
      assert.throws(() => canonicalize(n), TypeError, row.ieeeHex);
      failures++;
    } else {
      assert.equal(canonicalize(n), row.jcs, row.ieeeHex);
    }
  }
  assert.ok(failures >= 2, 'the table includes NaN and Infinity rows');
});

test('object keys are sorted by UTF-16 code units, not by code point or locale', () => {
  // U+1F600 is the surrogate pair d83d de00, which sorts before U+FB33 (RFC 8785 §3.2.3).
  const value = { '\uFB33': 1, '\u{1F600}': 2, '\r': 3, a: 4, B: 5, '1': 6, '': 7 };
  assert.equal(canonicalize(value), '{"":7,"\\r":3,"1":6,"B":5,"a":4,"\u{1F600}":2,"\uFB33":1}');
});

test('strings are escaped as RFC 8785 §3.2.2.2 requires', () => {
  assert.equal(canonicalize('\u0000\u001f\b\t\n\f\r"\\/\u007f\u2028é'), '"\\u0000\\u001f\\b\\t\\n\\f\\r\\"\\\\/\u007f\u2028é"');
});

test('a lone surrogate is refused because it is not I-JSON', () => {
  assert.throws(() => canonicalize('\ud800'), TypeError);
  assert.throws(() => canonicalize({ '\udc00': 1 }), TypeError);
  assert.equal(canonicalize('\ud83d\ude00'), '"😀"');
});

test('minus zero serializes as 0 and large integers use exponent form', () => {
  assert.equal(canonicalize(-0), '0');
  assert.equal(canonicalize(1e21), '1e+21');
  assert.equal(canonicalize(123456789012345680000), '123456789012345680000');
  assert.equal(canonicalize([1.0, 0.1, 1e-7]), '[1,0.1,1e-7]');
});

test('undefined object properties are omitted and undefined array elements become null', () => {
  assert.equal(canonicalize({ b: undefined, a: 1 }), '{"a":1}');
  assert.equal(canonicalize([undefined, 1]), '[null,1]');
  assert.equal(canonicalize({}), '{}');
  assert.equal(canonicalize([]), '[]');
  assert.equal(canonicalize(null), 'null');
  assert.equal(canonicalize(true), 'true');
});

test('values JSON cannot represent throw a TypeError', () => {
  for (const bad of [
    undefined,
    NaN,
    Infinity,
    -Infinity,
    1n,
    () => 1,
    Symbol('x'),
    { a: 1n },
    [NaN],
    { f() {} },
    new Map(),
    new Set(),
    new Uint8Array(1),
  ]) {
    assert.throws(() => canonicalize(bad), TypeError, String(typeof bad));
  }
});

test('a cyclic structure throws a TypeError instead of looping', () => {
  const a: Record<string, unknown> = {};
  a.self = a;
  assert.throws(() => canonicalize(a), TypeError);
  const shared = { x: 1 };
  assert.equal(canonicalize({ a: shared, b: shared }), '{"a":{"x":1},"b":{"x":1}}');
});

test('toJSON is honoured like JSON.stringify, so a Date becomes its ISO string', () => {
  const d = new Date('2026-11-21T10:00:00.000Z');
  assert.equal(canonicalize({ at: d }), '{"at":"2026-11-21T10:00:00.000Z"}');
});

test('canonical output equals JSON.stringify round trip for ordinary data', () => {
  const value = { z: [1, 'two', { y: null, x: false }], a: { nested: { deep: 1.5 } }, m: 'é' };
  assert.equal(canonicalize(value), canonicalize(JSON.parse(JSON.stringify(value))));
  assert.equal(canonicalize(value), '{"a":{"nested":{"deep":1.5}},"m":"é","z":[1,"two",{"x":false,"y":null}]}');
});

test('nesting far deeper than the call stack allows canonicalizes without overflow', () => {
  const depth = 100_000;
  const text = `${'['.repeat(depth)}0${']'.repeat(depth)}`;
  assert.equal(canonicalize(JSON.parse(text)), text);
  let deep: unknown = { b: 1, a: null };
  for (let i = 0; i < depth; i++) deep = { x: deep, a: [i] };
  const out = canonicalize(deep);
  assert.ok(out.startsWith(`{"a":[${depth - 1}],"x":{"a":[${depth - 2}],"x":`));
  assert.ok(out.endsWith(`{"a":[0],"x":{"a":null,"b":1}}${'}'.repeat(depth - 1)}`));
});

test('an error deep inside a value names its JSON Pointer', () => {
  assert.throws(() => canonicalize({ a: [1, { 'b/c': NaN }] }), /at \/a\/1\/b~1c$/);
  assert.throws(() => canonicalize(1n), /at \(root\)$/);
});

test('canonicalBytes is the UTF-8 encoding of the canonical text', () => {
  assert.deepEqual(canonicalBytes({ b: '€', a: 1 }), new Uint8Array(Buffer.from('{"a":1,"b":"€"}', 'utf8')));
});
