import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describeStores } from '../harness.ts';
import type { Queryable, Row, Stmt } from '../../src/db/types.ts';
import { appendLeaf, consistencyBetween, hashReader, inclusionAt, logSize, rootAt } from '../../src/log/store.ts';
import { signedHead } from '../../src/log/heads.ts';
import { inclusionProof } from '../../src/tlog/proofs.ts';
import { verifyConsistency, verifyInclusion } from '../../src/tlog/verify.ts';
import { hex, naiveRoot, unhex } from './fixtures.ts';

/** Wraps a Queryable and counts what reaches the database: each query and each batch is one round trip. */
function counting(q: Queryable) {
  const calls: string[] = [];
  const wrapped: Queryable = {
    query: <T extends Row>(text: string, params?: unknown[]) => {
      calls.push('query');
      return q.query<T>(text, params);
    },
    batch: (stmts: Stmt[]) => {
      calls.push(`batch(${stmts.length})`);
      return q.batch(stmts);
    },
  };
  return { q: wrapped, calls };
}

const randomLeaf = () => hex(randomBytes(32));

describeStores('log store', (h) => {
  const leaves: string[] = [];

  test('an empty log has size 0 and the root SHA-256 of the empty string', async () => {
    assert.equal(await logSize(h().db), 0);
    assert.equal(await rootAt(h().db, 0), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  test('appendLeaf rejects a leaf hash that is not 64 lowercase hex characters', async () => {
    for (const bad of ['', 'A'.repeat(64), 'a'.repeat(63), 'zz'.repeat(32)]) {
      await assert.rejects(h().db.tx((tx) => appendLeaf(tx, bad)), TypeError);
    }
    assert.equal(await logSize(h().db), 0);
  });

  test('appendLeaf costs two round trips: one pipelined batch and one insert', async () => {
    const leaf = randomLeaf();
    const calls = await h().db.tx(async (tx) => {
      const c = counting(tx);
      assert.equal(await appendLeaf(c.q, leaf), 0);
      return c.calls;
    });
    leaves.push(leaf);
    assert.deepEqual(calls, ['batch(2)', 'query']);
  });

  test('sequential appends give dense indexes and the naive RFC 6962 root at every size up to 40', async () => {
    while (leaves.length < 40) {
      const leaf = randomLeaf();
      const index = await h().db.tx((tx) => appendLeaf(tx, leaf));
      assert.equal(index, leaves.length);
      leaves.push(leaf);
    }
    for (let size = 0; size <= 40; size++) {
      assert.equal(await rootAt(h().db, size), hex(naiveRoot(leaves.slice(0, size).map(unhex))), `root of size ${size}`);
    }
    const [{ n }] = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM log_nodes');
    assert.equal(n, 2 * 40 - 2, 'a 40-leaf log stores 2n - popcount(n) complete subtrees');
  });

  test('a rolled-back append releases its index and leaves the tree untouched', async () => {
    await assert.rejects(h().db.tx(async (tx) => {
      assert.equal(await appendLeaf(tx, randomLeaf()), 40);
      throw new Error('the closing failed after appending');
    }), /closing failed/);
    assert.equal(await logSize(h().db), 40);
    const leaf = randomLeaf();
    assert.equal(await h().db.tx((tx) => appendLeaf(tx, leaf)), 40);
    leaves.push(leaf);
    assert.equal(await rootAt(h().db, 41), hex(naiveRoot(leaves.map(unhex))));
  });

  test('every inclusion proof for every leaf of every size up to 41 verifies against the naive root', async () => {
    for (let size = 1; size <= leaves.length; size++) {
      const root = naiveRoot(leaves.slice(0, size).map(unhex));
      for (let index = 0; index < size; index++) {
        const { auditPath, rootHash } = await inclusionAt(h().db, index, size);
        assert.equal(rootHash, hex(root));
        assert.ok(verifyInclusion(unhex(leaves[index]), index, size, auditPath.map(unhex), root), `leaf ${index} of ${size}`);
      }
    }
  });

  test('every consistency proof between sizes up to 41 verifies against the naive roots', async () => {
    for (let second = 1; second <= leaves.length; second++) {
      const r2 = naiveRoot(leaves.slice(0, second).map(unhex));
      for (let first = 1; first <= second; first++) {
        const r1 = naiveRoot(leaves.slice(0, first).map(unhex));
        const c = await consistencyBetween(h().db, first, second);
        assert.deepEqual([c.firstRoot, c.secondRoot], [hex(r1), hex(r2)]);
        assert.ok(verifyConsistency(first, second, r1, r2, c.path.map(unhex)), `${first} -> ${second}`);
      }
    }
  });

  test('an inclusion proof with its root reads the log in one query', async () => {
    const c = counting(h().db);
    await inclusionAt(c.q, 13, 41);
    await consistencyBetween(c.q, 7, 41);
    assert.deepEqual(c.calls, ['query', 'query']);
  });

  test('hashReader answers in the order asked and refuses a node that is not stored', async () => {
    const read = hashReader(h().db);
    const got = await read([{ level: 0, index: 5 }, { level: 0, index: 2 }, { level: 0, index: 5 }]);
    assert.deepEqual(got.map(hex), [leaves[5], leaves[2], leaves[5]]);
    await assert.rejects(read([{ level: 0, index: 41 }]), /log node 0\/41 is not stored/);
    await assert.rejects(inclusionProof(0, 42, read), RangeError);
  });

  test('signedHead refuses a size beyond the log', async () => {
    await assert.rejects(signedHead(h().db, 42), /not between 0 and the current size 41/);
  });
});

describeStores('log store under concurrent closings', (h) => {
  test('50 concurrent appending transactions get indexes 0..49 once each and the naive root in index order', async () => {
    const leaves = Array.from({ length: 50 }, randomLeaf);
    let waiting = 0;
    let mostWaiting = 0;
    const indexes = await Promise.all(leaves.map((leaf) => h().db.tx(async (tx) => {
      // Other work in the closing transaction before and after the append, as a closing has.
      await tx.query('SELECT pg_sleep(0.002)');
      mostWaiting = Math.max(mostWaiting, ++waiting);
      const index = await appendLeaf(tx, leaf);
      waiting--;
      await tx.query('SELECT pg_sleep(0.001)');
      return index;
    })));
    // On Postgres the appends really contend: several wait on the sequencer row at once. PGlite
    // has one connection, so its transactions run one after another.
    if (h().kind === 'postgres') assert.ok(mostWaiting > 1, `at most ${mostWaiting} append waited at a time`);
    assert.deepEqual([...indexes].sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i));
    const inOrder: string[] = new Array(50);
    indexes.forEach((index, i) => (inOrder[index] = leaves[i]));
    assert.equal(await logSize(h().db), 50);
    assert.equal(await rootAt(h().db, 50), hex(naiveRoot(inOrder.map(unhex))));
    const head = await signedHead(h().db);
    assert.equal(head.rootHash, hex(naiveRoot(inOrder.map(unhex))));
  });
});
