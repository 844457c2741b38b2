// appendBatch (pure) against the naive RFC 6962 definition and the in-memory tree, over random batch splits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { appendBatch, frontierIds, type NodeRow } from '@escrow-settlement/protocol/tlog/append';
import { createMemoryTree } from '@escrow-settlement/protocol/tlog/memory';
import { hex, naiveRoot, unhex } from './fixtures.ts';

test('property: any split of up to 70 leaves into batches gives the naive root after every batch and the nodes the memory tree stores', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 15 }), (sizes) => {
      const all: string[] = [];
      const stored = new Map<string, string>();
      const tree = createMemoryTree();
      let frontier: NodeRow[] = [];
      for (const k of sizes) {
        const batch = Array.from({ length: k }, () => hex(randomBytes(32)));
        const r = appendBatch(all.length, frontier, batch);
        all.push(...batch);
        for (const leaf of batch) tree.appendLeafHash(unhex(leaf));
        for (const row of r.rows) {
          assert.ok(!stored.has(`${row.level}/${row.idx}`), `node ${row.level}/${row.idx} written once`);
          stored.set(`${row.level}/${row.idx}`, row.hash);
        }
        assert.equal(r.size, all.length);
        assert.equal(r.rootHash, hex(naiveRoot(all.map(unhex))));
        assert.deepEqual(
          r.frontier.map((f) => ({ level: f.level, index: f.idx })),
          frontierIds(all.length),
        );
        frontier = r.frontier;
      }
      assert.equal(stored.size, tree.nodeCount, 'as many nodes as the memory tree stores (2n - popcount(n))');
    }),
    { numRuns: 60 },
  );
});

test('appendBatch refuses a frontier that does not fit the size (a missing stored node)', () => {
  assert.throws(() => appendBatch(3, [{ level: 1, idx: 0, hash: 'a'.repeat(64) }], ['b'.repeat(64)]), /log is inconsistent/);
  assert.throws(() => appendBatch(2, [{ level: 1, idx: 1, hash: 'a'.repeat(64) }], []), /log is inconsistent/);
});

test('an empty batch keeps the root; the empty log has the empty root', () => {
  assert.equal(appendBatch(0, [], []).rootHash, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  const one = appendBatch(0, [], ['c'.repeat(64)]);
  assert.equal(appendBatch(1, one.frontier, []).rootHash, 'c'.repeat(64));
});
