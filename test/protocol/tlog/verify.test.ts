// Verifier argument policy (invalid is false, malformed throws) and the in-memory tree's storage contract.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_ROOT, leafHash, nodeHash } from '@escrow-settlement/protocol/tlog/hash';
import { createMemoryTree } from '@escrow-settlement/protocol/tlog/memory';
import { consistencyProof, inclusionProof, treeRoot } from '@escrow-settlement/protocol/tlog/proofs';
import { rootFromInclusionProof, verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { hex, sampleLeaves } from './helpers.ts';

const leaves = sampleLeaves(11);
const tree = createMemoryTree();
for (const l of leaves) tree.appendLeafHash(l);

describe('verifyInclusion / rootFromInclusionProof', () => {
  it('recomputes the tree root from a valid audit path and returns null for impossible shapes', async () => {
    const root = await treeRoot(11, tree.read);
    const path = await inclusionProof(6, 11, tree.read);
    assert.deepEqual(rootFromInclusionProof(leaves[6], 6, 11, path), root);
    assert.equal(rootFromInclusionProof(leaves[6], 6, 11, path.slice(1)), null, 'too short');
    assert.equal(rootFromInclusionProof(leaves[6], 6, 11, [...path, root]), null, 'too long');
    assert.equal(rootFromInclusionProof(leaves[6], 11, 11, path), null, 'index == size');
  });

  it('returns false, not a throw, for proofs that do not verify', async () => {
    const root = await treeRoot(11, tree.read);
    const path = await inclusionProof(6, 11, tree.read);
    assert.equal(verifyInclusion(leaves[6], 6, 11, path, root), true);
    assert.equal(verifyInclusion(leaves[6], 7, 11, path, root), false);
    assert.equal(verifyInclusion(leaves[6], 6, 7, path, root), false);
    assert.equal(verifyInclusion(leaves[6], 6, 11, path, EMPTY_ROOT), false);
    assert.equal(verifyInclusion(leaves[6], 6, 11, path.reverse(), root), false);
    assert.equal(verifyInclusion(leaves[0], 12, 11, [], root), false);
    assert.equal(verifyInclusion(leaves[0], 0, 0, [], EMPTY_ROOT), false);
  });

  it('throws a TypeError for negative or fractional sizes and hashes that are not 32 bytes', () => {
    const h = leaves[0];
    assert.throws(() => verifyInclusion(h, -1, 2, [h], h), TypeError);
    assert.throws(() => verifyInclusion(h, 0, 1.5, [], h), TypeError);
    assert.throws(() => verifyInclusion(h, 0, 2 ** 53, [], h), TypeError);
    assert.throws(() => verifyInclusion(h, 0, 2, [h.slice(1)], h), TypeError);
    assert.throws(() => verifyInclusion(h, 0, 1, [], new Uint8Array(0)), TypeError);
    assert.throws(() => verifyInclusion(new Uint8Array(33), 0, 1, [], h), TypeError);
    assert.throws(() => verifyInclusion(h, 0, 2, 'nope' as unknown as Uint8Array[], h), TypeError);
  });
});

describe('verifyConsistency', () => {
  it('returns false for wrong proofs, swapped sizes and size1 == 0', async () => {
    const r5 = await treeRoot(5, tree.read);
    const r11 = await treeRoot(11, tree.read);
    const proof = await consistencyProof(5, 11, tree.read);
    assert.equal(verifyConsistency(5, 11, r5, r11, proof), true);
    assert.equal(verifyConsistency(5, 11, r11, r5, proof), false);
    assert.equal(verifyConsistency(11, 5, r11, r5, proof), false);
    assert.equal(verifyConsistency(5, 11, r5, r11, []), false);
    assert.equal(verifyConsistency(5, 11, r5, r11, proof.slice(0, -1)), false);
    assert.equal(verifyConsistency(5, 11, r5, r11, [...proof, r5]), false);
    assert.equal(verifyConsistency(0, 11, EMPTY_ROOT, r11, proof), false);
    assert.equal(verifyConsistency(11, 11, r11, r11, []), true);
    assert.equal(verifyConsistency(11, 11, r11, r11, [r11]), false);
  });

  it('throws a TypeError for negative sizes, non-32-byte roots (even when sizes are equal) and bad proof entries', () => {
    const h = leaves[0];
    assert.throws(() => verifyConsistency(-1, 2, h, h, []), TypeError);
    assert.throws(() => verifyConsistency(1, 2, h, h, [new Uint8Array(31)]), TypeError);
    assert.throws(() => verifyConsistency(1, 1, h.slice(0, 12), h.slice(0, 12), []), TypeError);
  });
});

describe('createMemoryTree', () => {
  it('hashes raw leaf data with the RFC 6962 leaf prefix and returns sequential indexes', async () => {
    const t = createMemoryTree();
    assert.equal(t.size, 0);
    assert.equal(t.append(new Uint8Array([1])), 0);
    assert.equal(t.appendLeafHash(leafHash(new Uint8Array([2]))), 1);
    assert.equal(t.size, 2);
    const root = nodeHash(leafHash(new Uint8Array([1])), leafHash(new Uint8Array([2])));
    assert.equal(hex(await treeRoot(2, t.read)), hex(root));
    assert.deepEqual(await t.read([{ level: 1, index: 0 }]), [root]);
  });

  it('stores each complete subtree exactly once, 2n - popcount(n) nodes in all', () => {
    const t = createMemoryTree();
    for (let n = 1; n <= 100; n++) {
      t.append(new Uint8Array([n]));
      const popcount = [...n.toString(2)].filter((b) => b === '1').length;
      assert.equal(t.nodeCount, 2 * n - popcount);
    }
  });

  it('rejects leaf hashes that are not 32 bytes and reads of nodes that are not complete', async () => {
    const t = createMemoryTree();
    assert.throws(() => t.appendLeafHash(new Uint8Array(31)), TypeError);
    t.append(new Uint8Array(0));
    await assert.rejects(t.read([{ level: 1, index: 0 }]), RangeError);
    await assert.rejects(t.read([{ level: 0, index: 1 }]), RangeError);
  });

  it('returns copies so callers cannot corrupt stored hashes', async () => {
    const [h] = await tree.read([{ level: 0, index: 0 }]);
    h.fill(0);
    assert.equal(hex((await tree.read([{ level: 0, index: 0 }]))[0]), hex(leaves[0]));
  });
});
