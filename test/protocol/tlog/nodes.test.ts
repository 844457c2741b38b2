// Planning of complete-subtree node ids: exactness beyond 2^32 and structural soundness via range algebra.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  childrenOf,
  consistencyPlan,
  foldPlan,
  inclusionPlan,
  nodeRange,
  nodesCompletedByAppend,
  rangeNodes,
  rootPlan,
  type NodeId,
  type ProofPlan,
} from '@escrow-settlement/protocol/tlog/nodes';
import { prng } from './helpers.ts';

/** A symbolic hash: the leaf range [lo, hi) whose MTH it stands for. */
type R = { lo: number; hi: number };

const isPow2 = (n: number): boolean => n >= 1 && 2 ** Math.round(Math.log2(n)) === n;

/** Node hash in range algebra: only accepts a split RFC 6962 §2.1 would make (left = largest 2^k < n). */
function combine(l: R, r: R): R {
  const w = l.hi - l.lo;
  assert.equal(l.hi, r.lo, `ranges [${l.lo},${l.hi}) and [${r.lo},${r.hi}) are not adjacent`);
  assert.ok(isPow2(w) && l.lo % w === 0, `left [${l.lo},${l.hi}) is not a complete subtree`);
  assert.ok(r.hi - r.lo >= 1 && r.hi - r.lo <= w, `right [${r.lo},${r.hi}) too large for left width ${w}`);
  return { lo: l.lo, hi: r.hi };
}

/** Every planned id is a complete subtree inside [0, size) with exact integer coordinates. */
function checkIds(ids: NodeId[], size: number): R[] {
  return ids.map((id) => {
    assert.ok(Number.isSafeInteger(id.level) && id.level >= 0 && id.level <= 53);
    assert.ok(Number.isSafeInteger(id.index) && id.index >= 0);
    const [lo, hi] = nodeRange(id);
    assert.ok(Number.isSafeInteger(hi) && hi <= size, `node ${id.level}/${id.index} beyond size ${size}`);
    return { lo, hi };
  });
}

const fold = (plan: ProofPlan, size: number): R[] => foldPlan(plan, checkIds(plan.ids, size), combine);
const half = (x: number): number => Math.floor(x / 2);

/** RFC 9162 §2.1.3.2 run over ranges: the path must rebuild exactly [0, size). */
function symbolicInclusion(index: number, size: number, path: R[]): R {
  let fn = index;
  let sn = size - 1;
  let r: R = { lo: index, hi: index + 1 };
  for (const p of path) {
    assert.ok(sn > 0, 'path too long');
    if (fn % 2 === 1 || fn === sn) {
      r = combine(p, r);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else r = combine(r, p);
    [fn, sn] = [half(fn), half(sn)];
  }
  assert.equal(sn, 0, 'path too short');
  return r;
}

/** RFC 9162 §2.1.4.2 run over ranges: must rebuild [0, m) and [0, n). */
function symbolicConsistency(m: number, n: number, proof: R[]): [R, R] {
  const c = isPow2(m) ? [{ lo: 0, hi: m }, ...proof] : proof;
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) [fn, sn] = [half(fn), half(sn)];
  let fr = c[0];
  let sr = c[0];
  for (const x of c.slice(1)) {
    assert.ok(sn > 0, 'proof too long');
    if (fn % 2 === 1 || fn === sn) {
      fr = combine(x, fr);
      sr = combine(x, sr);
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else sr = combine(sr, x);
    [fn, sn] = [half(fn), half(sn)];
  }
  assert.equal(sn, 0, 'proof too short');
  return [fr, sr];
}

const BIG = 2 ** 40 + 12345;
const MAX = Number.MAX_SAFE_INTEGER;

describe('rangeNodes', () => {
  it('decomposes [0, n) into one node per set bit of n, highest level first, for n = 2^40 + 12345', () => {
    const nodes = rangeNodes(0, BIG);
    const bits = [...BigInt(BIG).toString(2)]
      .reverse()
      .flatMap((b, i) => (b === '1' ? [i] : []))
      .reverse();
    assert.deepEqual(
      nodes.map((n) => n.level),
      bits,
    );
    let end = 0;
    for (const n of nodes) {
      assert.equal(n.index * 2 ** n.level, end, 'nodes are contiguous and exactly indexed');
      end += 2 ** n.level;
    }
    assert.equal(end, BIG);
    assert.deepEqual(nodes[0], { level: 40, index: 0 });
    assert.deepEqual(nodes.at(-1), { level: 0, index: BIG - 1 });
  });

  it('stays exact at Number.MAX_SAFE_INTEGER, where 32-bit bitwise arithmetic would fail', () => {
    const nodes = rangeNodes(0, MAX);
    assert.equal(nodes.length, 53);
    assert.deepEqual(nodes.at(-1), { level: 0, index: MAX - 1 });
    assert.deepEqual(rangeNodes(2 ** 52, 2 ** 52 + 2 ** 33 + 1), [
      { level: 33, index: 2 ** 19 },
      { level: 0, index: 2 ** 52 + 2 ** 33 },
    ]);
  });

  it('covers arbitrary ranges with the minimal left-to-right set of complete subtrees', () => {
    for (let b = 0; b <= 40; b++) {
      for (let e = b; e <= 40; e++) {
        const got = rangeNodes(b, e);
        const rs = checkIds(got, e);
        let at = b;
        for (const r of rs) {
          assert.equal(r.lo, at);
          at = r.hi;
        }
        assert.equal(at, e);
        // Minimal: no two neighbours could merge into their common parent.
        got.forEach((n, i) => {
          const next = got[i + 1];
          if (next) assert.ok(!(n.level === next.level && n.index % 2 === 0));
        });
      }
    }
    assert.deepEqual(rangeNodes(5, 5), []);
    assert.throws(() => rangeNodes(6, 5), RangeError);
    assert.throws(() => rangeNodes(-1, 5), RangeError);
  });
});

describe('nodesCompletedByAppend and childrenOf', () => {
  it('lists the nodes completed by each append bottom-up, once each, over the first 1024 appends', () => {
    const seen = new Set<string>();
    for (let size = 1; size <= 1024; size++) {
      for (const id of nodesCompletedByAppend(size)) {
        const [l, r] = childrenOf(id);
        assert.ok(seen.has(`${l.level}/${l.index}`) || l.level === 0);
        assert.equal(nodeRange(r)[1], size, 'the completed node ends at the new size');
        assert.ok(!seen.has(`${id.level}/${id.index}`));
        seen.add(`${id.level}/${id.index}`);
      }
    }
    assert.deepEqual(nodesCompletedByAppend(8), [
      { level: 1, index: 3 },
      { level: 2, index: 1 },
      { level: 3, index: 0 },
    ]);
    assert.deepEqual(nodesCompletedByAppend(7), []);
  });

  it('handles sizes beyond 2^32 exactly', () => {
    assert.deepEqual(
      nodesCompletedByAppend(2 ** 40 + 2 ** 20)
        .map((n) => n.level)
        .at(-1),
      20,
    );
    assert.deepEqual(nodesCompletedByAppend(2 ** 40 + 2 ** 20).at(-1), { level: 20, index: 2 ** 20 });
    assert.deepEqual(childrenOf({ level: 1, index: 2 ** 45 }), [
      { level: 0, index: 2 ** 46 },
      { level: 0, index: 2 ** 46 + 1 },
    ]);
    assert.throws(() => childrenOf({ level: 0, index: 3 }), RangeError);
    assert.throws(() => nodesCompletedByAppend(0), RangeError);
  });
});

describe('proof plans', () => {
  it('folds every root, inclusion and consistency plan for sizes 1..70 into valid RFC 6962 shapes', () => {
    for (let n = 1; n <= 70; n++) {
      assert.deepEqual(fold(rootPlan(n), n), [{ lo: 0, hi: n }]);
      for (let i = 0; i < n; i++) {
        assert.deepEqual(symbolicInclusion(i, n, fold(inclusionPlan(i, n), n)), { lo: 0, hi: n });
      }
      for (let m = 1; m < n; m++) {
        const [fr, sr] = symbolicConsistency(m, n, fold(consistencyPlan(m, n), n));
        assert.deepEqual(
          [fr, sr],
          [
            { lo: 0, hi: m },
            { lo: 0, hi: n },
          ],
        );
      }
      assert.deepEqual(consistencyPlan(n, n), { ids: [], groups: [] });
    }
    assert.deepEqual(rootPlan(0), { ids: [], groups: [] });
  });

  it('plans sound proofs with exact integer node ids for a tree of 2^40 + 12345 leaves', () => {
    const rnd = prng(40);
    const indexes = [0, 1, 2 ** 32, 2 ** 40 - 1, 2 ** 40, BIG - 2, BIG - 1];
    for (let k = 0; k < 200; k++) indexes.push(Math.floor(rnd() * BIG));
    for (const i of indexes) {
      const plan = inclusionPlan(i, BIG);
      assert.ok(plan.ids.length <= 2 * Math.log2(BIG) + 2);
      assert.deepEqual(symbolicInclusion(i, BIG, fold(plan, BIG)), { lo: 0, hi: BIG });
    }
    const olds = [1, 2, 3, 12345, 2 ** 32 + 1, 2 ** 40, 2 ** 40 + 1, BIG - 1];
    for (let k = 0; k < 200; k++) olds.push(1 + Math.floor(rnd() * (BIG - 1)));
    for (const m of olds) {
      const plan = consistencyPlan(m, BIG);
      assert.ok(plan.ids.length <= 2 * Math.log2(BIG) + 2);
      assert.deepEqual(symbolicConsistency(m, BIG, fold(plan, BIG)), [
        { lo: 0, hi: m },
        { lo: 0, hi: BIG },
      ]);
    }
  });

  it('plans the rightmost audit path at size 2^53 - 1 with the expected ephemeral-free shape', () => {
    const plan = inclusionPlan(MAX - 1, MAX);
    assert.equal(plan.ids.length, 52);
    assert.ok(plan.groups.every((g) => g === 1));
    assert.deepEqual(symbolicInclusion(MAX - 1, MAX, fold(plan, MAX)), { lo: 0, hi: MAX });
    const left = inclusionPlan(0, MAX);
    assert.equal(left.groups.length, 53);
    assert.equal(left.groups.at(-1), 52, 'the top sibling is the ephemeral node over [2^52, 2^53 - 1)');
    assert.deepEqual(symbolicInclusion(0, MAX, fold(left, MAX)), { lo: 0, hi: MAX });
  });

  it('rejects out-of-range plans with a RangeError', () => {
    assert.throws(() => inclusionPlan(5, 5), RangeError);
    assert.throws(() => inclusionPlan(0, 2 ** 53), RangeError);
    assert.throws(() => consistencyPlan(0, 5), RangeError);
    assert.throws(() => consistencyPlan(6, 5), RangeError);
    assert.throws(() => rootPlan(-1), RangeError);
    assert.throws(() => foldPlan(rootPlan(3), [], combine), RangeError);
  });
});
