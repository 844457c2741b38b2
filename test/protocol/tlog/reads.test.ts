// Proof construction touches storage once per proof, with O(log n) node ids.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMemoryTree } from '@escrow-settlement/protocol/tlog/memory';
import { consistencyPlan, inclusionPlan, rootPlan } from '@escrow-settlement/protocol/tlog/nodes';
import { consistencyProof, inclusionProof, treeRoot } from '@escrow-settlement/protocol/tlog/proofs';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { countingReader, prng, sampleLeaves } from './helpers.ts';

const bound = (n: number): number => 2 * Math.log2(n) + 2;
const N = 5000;
const leaves = sampleLeaves(N);
const tree = createMemoryTree();
for (const l of leaves) tree.appendLeafHash(l);

describe('storage reads per proof', () => {
  it('reads exactly once, with at most 2*log2(n)+2 ids, for roots and proofs over a 5000-leaf tree', async () => {
    const rnd = prng(5000);
    for (let k = 0; k < 400; k++) {
      const n = 2 + Math.floor(rnd() * (N - 1));
      const i = Math.floor(rnd() * n);
      const m = 1 + Math.floor(rnd() * (n - 1)); // 1 <= m < n

      const r = countingReader(tree.read);
      const root = await treeRoot(n, r.read);
      assert.equal(r.calls.length, 1);
      assert.ok(r.calls[0].length <= Math.log2(n) + 1, `root of ${n} read ${r.calls[0].length} ids`);

      const pi = countingReader(tree.read);
      const path = await inclusionProof(i, n, pi.read);
      assert.equal(pi.calls.length, 1, `inclusion ${i}/${n} read ${pi.calls.length} times`);
      assert.ok(pi.calls[0].length <= bound(n), `inclusion ${i}/${n} read ${pi.calls[0].length} ids`);
      assert.ok(verifyInclusion(leaves[i], i, n, path, root));

      const pc = countingReader(tree.read);
      const proof = await consistencyProof(m, n, pc.read);
      assert.equal(pc.calls.length, 1, `consistency ${m}->${n} read ${pc.calls.length} times`);
      assert.ok(pc.calls[0].length <= bound(n), `consistency ${m}->${n} read ${pc.calls[0].length} ids`);
      assert.ok(verifyConsistency(m, n, await treeRoot(m, tree.read), root, proof));
    }
  });

  it('does not read at all when the answer needs no stored node (empty root, size-1 path, m == n)', async () => {
    const r = countingReader(tree.read);
    await treeRoot(0, r.read);
    assert.deepEqual(await inclusionProof(0, 1, r.read), []);
    assert.deepEqual(await consistencyProof(7, 7, r.read), []);
    assert.equal(r.calls.length, 0);
  });

  it('plans at most 2*log2(n)+2 ids for every index and old size of every tree up to 600 leaves', () => {
    for (let n = 2; n <= 600; n++) {
      assert.ok(rootPlan(n).ids.length <= Math.log2(n) + 1);
      for (let i = 0; i < n; i++) assert.ok(inclusionPlan(i, n).ids.length <= bound(n), `incl ${i}/${n}`);
      for (let m = 1; m < n; m++) assert.ok(consistencyPlan(m, n).ids.length <= bound(n), `cons ${m}/${n}`);
    }
  });

  it('plans at most 2*log2(n)+2 ids for random proofs in trees of up to 10^6 leaves and beyond', () => {
    const rnd = prng(1e6);
    for (let k = 0; k < 3000; k++) {
      const n = k < 2000 ? 2 + Math.floor(rnd() * (1e6 - 1)) : 2 + Math.floor(rnd() * 2 ** 50);
      const i = Math.floor(rnd() * n);
      const m = 1 + Math.floor(rnd() * (n - 1));
      assert.ok(inclusionPlan(i, n).ids.length <= bound(n), `incl ${i}/${n}`);
      assert.ok(consistencyPlan(m, n).ids.length <= bound(n), `cons ${m}/${n}`);
    }
  });

  it('rejects a reader that returns the wrong number of hashes or non-32-byte hashes', async () => {
    await assert.rejects(
      inclusionProof(3, 10, async () => []),
      /returned 0 hashes/,
    );
    await assert.rejects(
      treeRoot(10, async (ids) => ids.map(() => new Uint8Array(31))),
      TypeError,
    );
  });
});
