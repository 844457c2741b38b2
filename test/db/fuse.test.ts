// fuse's text is built once per command shape (src/db/fuse.ts): the same parts give the same text,
// parameters are the call's own, and parts with other parameter counts are renumbered anew.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fuse } from '../../src/db/fuse.ts';

const ins = (n: number) => ({ text: 'INSERT INTO t (a) VALUES ($1)', params: [n] });
const upd = (n: number, m: number) => ({
  text: 'WITH x AS (SELECT $1::int AS v) UPDATE t SET a = (SELECT v FROM x) WHERE a = $2',
  params: [n, m],
});

test('fuse: one text per shape, the parameters of each call', () => {
  const a = fuse([ins(1), upd(2, 3)]);
  const b = fuse([ins(4), upd(5, 6)]);
  const want =
    'WITH w0 AS (INSERT INTO t (a) VALUES ($1)),\nw1_x AS (SELECT $2::int AS v),\nw1 AS (UPDATE t SET a = (SELECT v FROM w1_x) WHERE a = $3)\nSELECT 2 AS fused';
  assert.equal(a.text, want);
  assert.equal(b.text, want);
  assert.deepEqual(a.params, [1, 2, 3]);
  assert.deepEqual(b.params, [4, 5, 6]);
  // The other order is another shape: the update's parameters come first.
  const c = fuse([upd(7, 8), ins(9)]);
  assert.equal(
    c.text,
    'WITH w0_x AS (SELECT $1::int AS v),\nw0 AS (UPDATE t SET a = (SELECT v FROM w0_x) WHERE a = $2),\nw1 AS (INSERT INTO t (a) VALUES ($3))\nSELECT 2 AS fused',
  );
  assert.deepEqual(c.params, [7, 8, 9]);
});

test('fuse: the same texts with another parameter count are renumbered for that count', () => {
  const two = { text: 'INSERT INTO t (a, b) VALUES ($1, $2)', params: [1, 2] };
  const lone = { text: 'INSERT INTO u (a) VALUES ($1)', params: [3] };
  assert.match(fuse([two, lone]).text, /INSERT INTO u \(a\) VALUES \(\$3\)/);
  // A part that names fewer parameters than it is given shifts the next part by what it is given.
  const padded = { ...two, params: [1, 2, 'x'] };
  const f = fuse([padded, lone]);
  assert.match(f.text, /INSERT INTO u \(a\) VALUES \(\$4\)/);
  assert.deepEqual(f.params, [1, 2, 'x', 3]);
});

test('fuse: a select comes first, its parameters too; a refused part is refused every time', () => {
  const sel = { text: 'WITH c AS (SELECT $1::int AS n) SELECT 1 / n FROM c', params: [0] };
  const f = fuse([ins(5)], { select: sel });
  assert.equal(f.text, 'WITH c AS (SELECT $1::int AS n),\nw0 AS (INSERT INTO t (a) VALUES ($2))\nSELECT 1 / n FROM c');
  assert.deepEqual(f.params, [0, 5]);
  const read = { text: 'SELECT 1', params: [] };
  for (let i = 0; i < 2; i++) assert.throws(() => fuse([ins(1), read]), /fuse: not a write/);
});
