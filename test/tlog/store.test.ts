// The log's sequence → integrate steps and its read side, against the naive RFC 6962 reference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describeStores, openStore, type StoreKind } from '../harness.ts';
import type { Db, Queryable, Row, Stmt, Tx } from '../../src/db/types.ts';
import { consistencyBetween, hashReader, inclusionAt, logSize, rootAt } from '../../src/tlog/store.ts';
import { sequenceLeaf } from '../../src/tlog/sequence.ts';
import { integrateBatch, INTEGRATE_LOCK_SQL } from '../../src/tlog/integrate.ts';
import { signedHead } from '../../src/tlog/heads.ts';
import { issuerHeadKeys } from '../../src/proof/keys.ts';
import { inclusionProof } from '@escrow-settlement/protocol/tlog/proofs';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { hex, naiveRoot, nodeVerifyHex, unhex } from './fixtures.ts';
import { PG_URL } from '../harness.ts';

/** Wraps a Db and counts what reaches the database: BEGIN, each query or pipelined batch, COMMIT. */
function counting(db: Db) {
  const calls: string[] = [];
  const wrapQ = (q: Queryable): Queryable => ({
    query: <T extends Row>(text: string, params?: unknown[]) => {
      calls.push('query');
      return q.query<T>(text, params);
    },
    batch: (stmts: Stmt[]) => {
      calls.push(`batch(${stmts.length})`);
      return q.batch(stmts);
    },
  });
  const wrapped: Db = {
    ...db,
    ...wrapQ(db),
    tx: async <T>(fn: (tx: Tx) => Promise<T>) => {
      calls.push('begin');
      let with_ = false;
      const r = await db.tx((t) =>
        fn({
          ...t,
          ...wrapQ(t),
          commitWith: (stmts: Stmt[]) => {
            calls.push(`batch(${stmts.length})+commit`);
            with_ = true;
            return t.commitWith(stmts);
          },
        }),
      );
      if (!with_) calls.push('commit');
      return r;
    },
  };
  return { db: wrapped, calls };
}

const randomLeaf = () => hex(randomBytes(32));
let entrySeq = 0;
const OPTS = { keys: issuerHeadKeys, max: 1000 };

/** A closing's sequence step, alone in its transaction. */
async function sequence(db: Db, leaf: string): Promise<string> {
  const id = `e${entrySeq++}`;
  const s = sequenceLeaf(id, leaf);
  await db.tx((tx) => tx.query(s.text, s.params));
  return id;
}

describeStores('log: sequence → integrate', (h) => {
  const leaves: string[] = [];

  test('an empty log has size 0, the root SHA-256 of the empty string, and integrating nothing changes nothing', async () => {
    assert.equal(await logSize(h().db), 0);
    assert.equal(await rootAt(h().db, 0), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    const empty = await integrateBatch(h().db, OPTS);
    assert.deepEqual({ integrated: empty.integrated, size: empty.size, tipSize: empty.tip?.size }, { integrated: [], size: 0, tipSize: 0 });
  });

  test('sequenceLeaf refuses a leaf hash that is not 64 lowercase hex characters, and an empty entry id', () => {
    for (const bad of ['', 'A'.repeat(64), 'a'.repeat(63), 'zz'.repeat(32)]) assert.throws(() => sequenceLeaf('x', bad), TypeError);
    assert.throws(() => sequenceLeaf('', 'a'.repeat(64)), TypeError);
  });

  test('an integration batch costs two pipelined batches (BEGIN with the first; nodes, size, indices and head one statement with COMMIT), whatever its size (key cached)', async () => {
    // The first batch reads the signing key's material once (then cached per key id).
    const first = randomLeaf();
    await sequence(h().db, first);
    leaves.push(first);
    assert.deepEqual(
      (await integrateBatch(h().db, OPTS)).integrated.map((d) => d.index),
      [0],
    );
    for (let i = 0; i < 3; i++) {
      const leaf = randomLeaf();
      await sequence(h().db, leaf);
      leaves.push(leaf);
    }
    const c = counting(h().db);
    const r = await integrateBatch(c.db, OPTS);
    assert.deepEqual(
      r.integrated.map((d) => d.index),
      [1, 2, 3],
    );
    assert.deepEqual(c.calls, ['begin', 'batch(4)', 'batch(1)+commit']);
  });

  test('batches of 1 to 6 leaves give dense indices in sequence order and the naive root at every size up to 40', async () => {
    let k = 1;
    while (leaves.length < 40) {
      const ids: string[] = [];
      const batch = Array.from({ length: Math.min(k, 40 - leaves.length) }, randomLeaf);
      for (const leaf of batch) ids.push(await sequence(h().db, leaf));
      const r = await integrateBatch(h().db, OPTS);
      assert.deepEqual(
        r.integrated,
        ids.map((entryId, i) => ({ entryId, index: leaves.length + i })),
      );
      leaves.push(...batch);
      assert.equal(r.size, leaves.length);
      assert.equal(r.rootHash, hex(naiveRoot(leaves.map(unhex))));
      k = (k % 6) + 1;
    }
    for (let size = 0; size <= 40; size++) {
      assert.equal(await rootAt(h().db, size), hex(naiveRoot(leaves.slice(0, size).map(unhex))), `root of size ${size}`);
    }
    const [{ n }] = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM log_nodes');
    assert.equal(n, 2 * 40 - 2, 'a 40-leaf log stores 2n - popcount(n) complete subtrees');
  });

  test('each batch publishes one head for its size, signed by the active key over JCS({logSize, rootHash, signedAt})', async () => {
    const heads = await h().db.query<{ size: string; root_hash: string; signed_at: string; signature: string }>(
      'SELECT size::text AS size, root_hash, signed_at, signature FROM log_heads ORDER BY size',
    );
    assert.ok(heads.length >= 10, `${heads.length} heads`);
    const head = await signedHead(h().db, issuerHeadKeys);
    assert.equal(head.logSize, 40);
    const stored = heads.find((x) => Number(x.size) === 40)!;
    assert.equal(head.signedAt, stored.signed_at, 'reading the head returns the one the batch published');
    for (const x of heads) {
      const body = canonicalize({ logSize: Number(x.size), rootHash: x.root_hash, signedAt: x.signed_at });
      assert.ok(nodeVerifyHex(head.signature.signer, body, x.signature), `head of size ${x.size} verifies`);
      assert.equal(x.root_hash, hex(naiveRoot(leaves.slice(0, Number(x.size)).map(unhex))));
    }
  });

  test('a rolled-back closing leaves nothing pending; a failed batch leaves its leaves pending for the next', async () => {
    await assert.rejects(
      h().db.tx(async (tx) => {
        const s = sequenceLeaf('rolled-back', randomLeaf());
        await tx.query(s.text, s.params);
        throw new Error('the closing failed after sequencing');
      }),
      /closing failed/,
    );
    const none = await integrateBatch(h().db, OPTS);
    assert.deepEqual({ integrated: none.integrated, size: none.size }, { integrated: [], size: 40 });
    const leaf = randomLeaf();
    const id = await sequence(h().db, leaf);
    await assert.rejects(
      integrateBatch(h().db, {
        ...OPTS,
        indexed: () => {
          throw new Error('the owner failed mid-batch');
        },
      }),
      /mid-batch/,
    );
    assert.equal(await logSize(h().db), 40);
    const [{ n }] = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM log_pending');
    assert.equal(n, 1, 'the leaf is still pending');
    assert.deepEqual((await integrateBatch(h().db, OPTS)).integrated, [{ entryId: id, index: 40 }]);
    leaves.push(leaf);
    assert.equal(await rootAt(h().db, 41), hex(naiveRoot(leaves.map(unhex))));
  });

  test('a batch takes at most max leaves, oldest first', async () => {
    const ids = [];
    const batch = Array.from({ length: 5 }, randomLeaf);
    for (const leaf of batch) ids.push(await sequence(h().db, leaf));
    const first = await integrateBatch(h().db, { ...OPTS, max: 3 });
    assert.deepEqual(
      first.integrated.map((d) => d.entryId),
      ids.slice(0, 3),
    );
    const second = await integrateBatch(h().db, { ...OPTS, max: 3 });
    assert.deepEqual(
      second.integrated.map((d) => d.entryId),
      ids.slice(3),
    );
    leaves.push(...batch);
    assert.equal(second.rootHash, hex(naiveRoot(leaves.map(unhex))));
  });

  test('every inclusion proof for every leaf of every size verifies against the naive root', async () => {
    for (let size = 1; size <= leaves.length; size++) {
      const root = naiveRoot(leaves.slice(0, size).map(unhex));
      for (let index = 0; index < size; index++) {
        const { auditPath, rootHash } = await inclusionAt(h().db, index, size);
        assert.equal(rootHash, hex(root));
        assert.ok(verifyInclusion(unhex(leaves[index]), index, size, auditPath.map(unhex), root), `leaf ${index} of ${size}`);
      }
    }
  });

  test('every consistency proof between sizes (across batches) verifies against the naive roots', async () => {
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

  test('hashReader answers in the order asked and refuses a node that is not stored', async () => {
    const read = hashReader(h().db);
    const got = await read([
      { level: 0, index: 5 },
      { level: 0, index: 2 },
      { level: 0, index: 5 },
    ]);
    assert.deepEqual(got.map(hex), [leaves[5], leaves[2], leaves[5]]);
    await assert.rejects(read([{ level: 0, index: leaves.length }]), new RegExp(`log node 0/${leaves.length} is not stored`));
    await assert.rejects(inclusionProof(0, leaves.length + 1, read), RangeError);
  });

  test('signedHead refuses a size beyond the log', async () => {
    await assert.rejects(
      signedHead(h().db, issuerHeadKeys, leaves.length + 1),
      new RegExp(`not between 0 and the current size ${leaves.length}`),
    );
  });
});

for (const kind of (PG_URL ? ['postgres'] : []) as StoreKind[]) {
  test(`[${kind}] 60 concurrent closings and two integrators on two pools racing: dense indices, each leaf once, the naive root`, async () => {
    const schema = `t_lograce_${process.pid}_${Date.now().toString(36)}`;
    const a = await openStore(kind, { schema });
    const b = await openStore(kind, { schema });
    try {
      const leaves = Array.from({ length: 60 }, randomLeaf);
      let stop = false;
      const integrator = async (db: Db) => {
        let n = 0;
        while (!stop) n += (await integrateBatch(db, { ...OPTS, max: 7 })).integrated.length;
        return n;
      };
      const runs = [integrator(a.db), integrator(b.db)];
      const ids = await Promise.all(
        leaves.map((leaf, i) =>
          (i % 2 ? a.db : b.db).tx(async (tx) => {
            await tx.query('SELECT pg_sleep(0.002)');
            const s = sequenceLeaf(`race-${i}`, leaf);
            await tx.query(s.text, s.params);
            return `race-${i}`;
          }),
        ),
      );
      // Let the integrators drain, then stop them.
      for (let t = 0; t < 200 && (await logSize(a.db)) < 60; t++) await new Promise((r) => setTimeout(r, 10));
      stop = true;
      const counts = await Promise.all(runs);
      assert.equal(counts[0] + counts[1], 60, `integrated ${counts.join(' + ')}`);
      assert.ok(counts[0] > 0 && counts[1] > 0, `both integrators took batches: ${counts.join(' + ')}`);
      // Reconstruct index order from level-0 nodes; every leaf appears exactly once.
      const rows = await a.db.query<{ i: string; hash: string }>(
        'SELECT n.idx::text AS i, n.hash FROM log_nodes n WHERE n.level = 0 ORDER BY n.idx',
      );
      assert.deepEqual(
        rows.map((r) => Number(r.i)),
        Array.from({ length: 60 }, (_, i) => i),
      );
      assert.deepEqual(rows.map((r) => r.hash).sort(), [...leaves].sort());
      assert.equal(await rootAt(a.db, 60), hex(naiveRoot(rows.map((r) => unhex(r.hash)))));
      assert.equal(ids.length, 60);
    } finally {
      await a.db.close();
      await b.drop();
    }
  });

  test(`[${kind}] a batch waits for the integration lock held elsewhere, then sees that batch's commit`, async () => {
    const s = await openStore(kind, { max: 3 });
    try {
      const leaf = randomLeaf();
      await sequence(s.db, leaf);
      let done = false;
      const held = s.db.tx(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(${INTEGRATE_LOCK_SQL})`);
        const p = integrateBatch(s.db, OPTS).then((r) => {
          done = true;
          return r;
        });
        await new Promise((r) => setTimeout(r, 150));
        assert.equal(done, false, 'the batch waited for the lock');
        return { p }; // not the promise itself: db.tx would wait for it while holding the lock
      });
      const r = await (await held).p;
      assert.equal(r.integrated.length, 1);
    } finally {
      await s.drop();
    }
  });
}
