// The one-round-trip integration batch (integrate.ts integrateKnown): an integrator appends the
// leaves its own closings handed it to the tip its last batch left, checking in the same write that
// the log is still there. Every way the tip can be wrong must roll the whole batch back (StaleTip),
// and the integrator must then fall back to a full batch without losing or doubling a leaf.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describeStores } from '../harness.ts';
import type { Db } from '../../src/db/types.ts';
import { createIntegrator } from '../../src/tlog/integrator.ts';
import { sequenceLeaf } from '../../src/tlog/sequence.ts';
import { integrateBatch, integrateKnown, StaleTip, type KnownLeaf, type Tip } from '../../src/tlog/integrate.ts';
import { logSize, rootAt } from '../../src/tlog/store.ts';
import { signedHead } from '../../src/tlog/heads.ts';
import { issuerHeadKeys, rotateIssuer } from '../../src/proof/keys.ts';
import { advanceClock } from '../../src/escrow/clock.ts';
import { verifyJson } from '@escrow-settlement/protocol/crypto/ed25519';
import { hex, naiveRoot, unhex } from './fixtures.ts';

const OPTS = { keys: issuerHeadKeys, max: 1000 };
let n = 0;

async function commitLeaf(db: Db): Promise<KnownLeaf> {
  const leaf = { entryId: `t${n++}`, leafHash: randomBytes(32).toString('hex') };
  const s = sequenceLeaf(leaf.entryId, leaf.leafHash);
  await db.tx((tx) => tx.query(s.text, s.params));
  return leaf;
}

async function pendingIds(db: Db): Promise<string[]> {
  return (await db.query<{ entry_id: string }>('SELECT entry_id FROM log_pending ORDER BY seq')).map((r) => r.entry_id);
}

/** Every leaf hash of the log in index order, read straight from log_nodes level 0. */
async function leafHashes(db: Db): Promise<string[]> {
  return (await db.query<{ hash: string }>('SELECT hash FROM log_nodes WHERE level = 0 ORDER BY idx')).map((r) => r.hash);
}

/** A tip read by a full batch (it integrates whatever is pending first). */
async function freshTip(db: Db): Promise<Tip> {
  const r = await integrateBatch(db, OPTS);
  assert.ok(r.tip, 'a full batch leaves a tip');
  return r.tip!;
}

async function expectStale(p: Promise<unknown>, why: RegExp | undefined = undefined): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof StaleTip, `expected StaleTip, got ${String(err)}`);
    if (why) assert.match((err as Error).message, why);
    return true;
  });
}

describeStores("log: one-round-trip batches from the integrator's tip", (h) => {
  test('appends what it was handed: the same tree as a full batch, one signed head, nothing left pending', async () => {
    const db = h().db;
    let tip = await freshTip(db);
    const before = await leafHashes(db);
    const leaves = [await commitLeaf(db), await commitLeaf(db), await commitLeaf(db)];
    const r = await integrateKnown(db, OPTS, tip, leaves);
    assert.deepEqual(
      r.integrated,
      leaves.map((l, i) => ({ entryId: l.entryId, index: tip.size + i })),
    );
    assert.equal(r.size, tip.size + 3);
    assert.equal(await logSize(db), r.size);
    assert.deepEqual(await pendingIds(db), []);
    const all = [...before, ...leaves.map((l) => l.leafHash)];
    assert.deepEqual(await leafHashes(db), all);
    assert.equal(r.rootHash, hex(naiveRoot(all.map(unhex))), 'the root of RFC 6962 over every leaf');
    assert.equal(await rootAt(db, r.size), r.rootHash, 'interior nodes stored as a full batch stores them');
    // The head of the new size is published, signed over JCS({logSize, rootHash, signedAt}).
    const head = await signedHead(db, issuerHeadKeys, r.size);
    assert.equal(head.rootHash, r.rootHash);
    assert.ok(
      verifyJson(
        { logSize: head.logSize, rootHash: head.rootHash, signedAt: head.signedAt },
        head.signature.signature,
        tip.signer.publicKey,
      ),
    );
    assert.equal(head.signature.signer, tip.signer.publicKey);
    // Chained: the next one-round-trip batch appends to the tip this one returned.
    tip = r.tip!;
    const more = [await commitLeaf(db)];
    const r2 = await integrateKnown(db, OPTS, tip, more);
    assert.equal(r2.size, r.size + 1);
    assert.equal(r2.rootHash, hex(naiveRoot([...all, more[0].leafHash].map(unhex))));
    assert.ok(r2.tip!.signedAtMs >= Date.parse(head.signedAt), 'signedAt never goes back');
  });

  test('another integrator moved the log: StaleTip, nothing written, the leaf still pending', async () => {
    const db = h().db;
    const tip = await freshTip(db);
    await commitLeaf(db);
    await integrateBatch(db, OPTS); // "another instance"
    const size = await logSize(db);
    const mine = await commitLeaf(db);
    await expectStale(integrateKnown(db, OPTS, tip, [mine]));
    assert.equal(await logSize(db), size);
    assert.deepEqual(await pendingIds(db), [mine.entryId]);
    const r = await integrateBatch(db, OPTS);
    assert.deepEqual(r.integrated, [{ entryId: mine.entryId, index: size }]);
  });

  test('a named leaf is no longer pending (another integrator took it): StaleTip, the others stay pending', async () => {
    const db = h().db;
    const tip = await freshTip(db);
    const a = await commitLeaf(db);
    const b = await commitLeaf(db);
    await db.query('DELETE FROM log_pending WHERE entry_id = $1', [a.entryId]);
    await expectStale(integrateKnown(db, OPTS, tip, [a, b]));
    assert.equal(await logSize(db), tip.size);
    assert.deepEqual(await pendingIds(db), [b.entryId]);
    await integrateBatch(db, OPTS);
  });

  test('the service clock moved (sandbox clock advanced): StaleTip; a full batch signs with the new clock', async () => {
    const db = h().db;
    const tip = await freshTip(db);
    const leaf = await commitLeaf(db);
    await advanceClock(db, 3600);
    await expectStale(integrateKnown(db, OPTS, tip, [leaf]));
    assert.deepEqual(await pendingIds(db), [leaf.entryId]);
    const r = await integrateBatch(db, OPTS);
    const head = await signedHead(db, issuerHeadKeys, r.size);
    const now = (await db.query<{ now: Date }>('SELECT svc_now() AS now'))[0].now.getTime();
    assert.ok(Math.abs(Date.parse(head.signedAt) - now) < 60_000, `signedAt ${head.signedAt} follows the advanced clock`);
  });

  test('the issuer key was rotated: StaleTip; the full batch signs with the new key', async () => {
    const db = h().db;
    const tip = await freshTip(db);
    const leaf = await commitLeaf(db);
    const { active } = await rotateIssuer(db);
    await expectStale(integrateKnown(db, OPTS, tip, [leaf]));
    const r = await integrateBatch(db, OPTS);
    assert.equal(r.tip!.signer.keyId, active.keyId);
    assert.notEqual(active.keyId, tip.signer.keyId);
  });

  test('the integrator: own closings go one round trip at a time; when another instance integrates it falls back, and nothing is lost or doubled', async () => {
    const db = h().db;
    const kinds: string[] = [];
    const counting: Db = {
      ...db,
      tx: (fn) =>
        db.tx((tx) =>
          fn({
            ...tx,
            batch: (stmts) => {
              if (stmts.some((s) => s.text.includes('pg_advisory_xact_lock'))) kinds.push('full');
              return tx.batch(stmts);
            },
            commitWith: (stmts) => {
              if (stmts.some((s) => s.text.includes('pg_advisory_xact_lock'))) kinds.push('known');
              return tx.commitWith(stmts);
            },
          }),
        ),
    };
    const it = createIntegrator(counting, { ...OPTS, waitMs: 10_000, staleBackoffMs: 0 });
    const other = createIntegrator(db, { ...OPTS, waitMs: 10_000 });
    try {
      const start = await logSize(db);
      const mine: KnownLeaf[] = [];
      const wait = async () => {
        const leaf = await commitLeaf(db);
        mine.push(leaf);
        return it.settled([leaf]);
      };
      assert.equal(await wait(), true); // no tip yet: a full batch
      assert.equal(await wait(), true); // from the tip: one round trip
      assert.deepEqual(kinds, ['full', 'known']);
      // Another instance integrates a leaf of its own: this integrator's tip is stale.
      const theirs = await commitLeaf(db);
      assert.equal(await other.settled([theirs]), true);
      kinds.length = 0;
      assert.equal(await wait(), true);
      assert.deepEqual(kinds, ['known', 'full'], 'tried from the stale tip (rolled back), then a full batch');
      // Leftovers nobody here waits for (a crashed instance's) are taken by drain's full batch.
      const orphan = await commitLeaf(db);
      await it.drain();
      assert.deepEqual(await pendingIds(db), []);
      const leaves = await leafHashes(db);
      assert.equal(leaves.length, start + mine.length + 2, 'dense: every leaf once');
      for (const l of [...mine, theirs, orphan])
        assert.equal(leaves.filter((x) => x === l.leafHash).length, 1, `${l.entryId} exactly once`);
      assert.equal(await rootAt(db, leaves.length), hex(naiveRoot(leaves.map(unhex))));
    } finally {
      await it.stop();
      await other.stop();
    }
  });
});
