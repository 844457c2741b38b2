// Memory-tree roots and proofs equal the published RFC 6962 reference trees and a naive RFC 6962 §2.1 recursion.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_ROOT, leafHash } from '@escrow-settlement/protocol/tlog/hash';
import { createMemoryTree, type MemoryTree } from '@escrow-settlement/protocol/tlog/memory';
import { consistencyProof, inclusionProof, treeRoot } from '@escrow-settlement/protocol/tlog/proofs';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { hex, naiveMth, naivePath, naiveProof, readJson, sampleLeaves, unhex } from './helpers.ts';

type RefTree = {
  leafDataUtf8OrHex?: string[];
  leafInputsHex?: string[];
  leafHashes: string[];
  rootsBySize: Record<string, string>;
  inclusion: { leafIndex: number | null; treeSize: number; path: string[] }[];
  consistency: { first: number; second: number; proof: string[] }[];
};

const hexes = (hs: Uint8Array[]): string[] => hs.map(hex);

/** Builds one memory tree per size prefix lazily: proofs for size n need a tree of exactly n leaves. */
function treesFromData(leafData: Uint8Array[]): MemoryTree[] {
  const trees: MemoryTree[] = [];
  for (let n = 0; n <= leafData.length; n++) {
    const t = createMemoryTree();
    for (let i = 0; i < n; i++) t.append(leafData[i]);
    trees.push(t);
  }
  return trees;
}

async function checkReferenceFile(file: string): Promise<void> {
  const v = readJson<RefTree>(`rfc6962-reference-tree/${file}`);
  const data = (v.leafDataUtf8OrHex ?? v.leafInputsHex ?? []).map(unhex);
  const trees = treesFromData(data);
  const n = data.length;
  assert.deepEqual(
    data.map((d) => hex(leafHash(d))),
    v.leafHashes,
  );
  for (const [size, root] of Object.entries(v.rootsBySize)) {
    assert.equal(hex(await treeRoot(Number(size), trees[n].read)), root, `root of size ${size}`);
    assert.equal(hex(await treeRoot(Number(size), trees[Number(size)].read)), root);
  }
  let inclusions = 0;
  for (const c of v.inclusion) {
    if (c.leafIndex === null) continue; // degenerate upstream row (tree size 0), covered elsewhere
    const proof = await inclusionProof(c.leafIndex, c.treeSize, trees[n].read);
    assert.deepEqual(hexes(proof), c.path, `inclusion ${c.leafIndex} in ${c.treeSize}`);
    const root = unhex(v.rootsBySize[String(c.treeSize)]);
    assert.ok(verifyInclusion(unhex(v.leafHashes[c.leafIndex]), c.leafIndex, c.treeSize, proof, root));
    inclusions++;
  }
  for (const c of v.consistency) {
    const proof = await consistencyProof(c.first, c.second, trees[n].read);
    assert.deepEqual(hexes(proof), c.proof, `consistency ${c.first} -> ${c.second}`);
    const r1 = unhex(v.rootsBySize[String(c.first)]);
    const r2 = unhex(v.rootsBySize[String(c.second)]);
    assert.ok(verifyConsistency(c.first, c.second, r1, r2, proof));
  }
  assert.ok(inclusions > 0 && v.consistency.length > 0);
}

describe('RFC 6962 reference trees', () => {
  it('reproduces every root, audit path and consistency proof of the 8-leaf CT reference tree', async () => {
    await checkReferenceFile('reference-tree-8.json');
  });
  it('reproduces all 36 + 36 proofs of the derived 8-leaf reference tree', async () => {
    await checkReferenceFile('derived-reference-tree-all-proofs.json');
  });
  it('reproduces all 561 + 561 proofs of the derived "leaf i" trees of sizes 1..33', async () => {
    await checkReferenceFile('derived-leaf-i-tree-1-33.json');
  });
  it('uses SHA-256 of the empty string as the root of the empty tree', async () => {
    const v = readJson<{ emptyRoot: string }>('rfc6962-reference-tree/reference-tree-8.json');
    assert.equal(hex(EMPTY_ROOT), v.emptyRoot);
    let reads = 0;
    const root = await treeRoot(0, async () => {
      reads++;
      return [];
    });
    assert.equal(hex(root), v.emptyRoot);
    assert.equal(reads, 0);
  });
});

describe('agreement with a naive recursive RFC 6962 implementation', () => {
  const leaves = sampleLeaves(64);
  const tree = createMemoryTree();
  const mem = new Map<number, Uint8Array>(); // roots by size, captured while growing

  it('computes MTH equal to the naive recursion for every size 0..64 while appending', async () => {
    mem.set(0, await treeRoot(0, tree.read));
    assert.deepEqual(mem.get(0), naiveMth([]));
    for (let n = 1; n <= 64; n++) {
      tree.appendLeafHash(leaves[n - 1]);
      assert.equal(tree.size, n);
      const root = await treeRoot(n, tree.read);
      assert.equal(hex(root), hex(naiveMth(leaves.slice(0, n))), `MTH of size ${n}`);
      mem.set(n, root);
    }
    // 2n - popcount(n) stored nodes: every complete subtree exactly once.
    assert.equal(tree.nodeCount, 2 * 64 - 1);
  });

  it('produces PATH(m, D[n]) for every leaf of every size 1..64, and each path verifies', async () => {
    for (let n = 1; n <= 64; n++) {
      const d = leaves.slice(0, n);
      const root = naiveMth(d);
      for (let m = 0; m < n; m++) {
        const proof = await inclusionProof(m, n, tree.read);
        assert.deepEqual(hexes(proof), hexes(naivePath(m, d)), `PATH(${m}, D[${n}])`);
        assert.ok(verifyInclusion(d[m], m, n, proof, root), `verify PATH(${m}, D[${n}])`);
        if (n > 1) assert.equal(verifyInclusion(d[(m + 1) % n], m, n, proof, root), false);
      }
    }
  });

  it('produces PROOF(m, D[n]) for every 1 <= m <= n <= 64, and each proof verifies', async () => {
    for (let n = 1; n <= 64; n++) {
      const d = leaves.slice(0, n);
      const root2 = naiveMth(d);
      for (let m = 1; m <= n; m++) {
        const root1 = naiveMth(d.slice(0, m));
        const proof = await consistencyProof(m, n, tree.read);
        assert.deepEqual(hexes(proof), hexes(naiveProof(m, d)), `PROOF(${m}, D[${n}])`);
        assert.ok(verifyConsistency(m, n, root1, root2, proof), `verify PROOF(${m}, D[${n}])`);
        if (m < n) assert.equal(verifyConsistency(m, n, root2, root2, proof), false);
      }
    }
  });

  it('rejects out-of-range proof requests with a RangeError', async () => {
    await assert.rejects(inclusionProof(64, 64, tree.read), RangeError);
    await assert.rejects(inclusionProof(-1, 64, tree.read), RangeError);
    await assert.rejects(inclusionProof(0, 0, tree.read), RangeError);
    await assert.rejects(inclusionProof(0.5, 64, tree.read), RangeError);
    await assert.rejects(consistencyProof(0, 64, tree.read), RangeError);
    await assert.rejects(consistencyProof(9, 8, tree.read), RangeError);
    await assert.rejects(treeRoot(-1, tree.read), RangeError);
    await assert.rejects(treeRoot(2 ** 53, tree.read), RangeError);
    // Beyond the stored tree the reader (not the planner) refuses: the nodes do not exist yet.
    await assert.rejects(treeRoot(65, tree.read), RangeError);
  });
});
