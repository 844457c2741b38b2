// The in-process integrator: closings wait (bounded) for their leaves; batches gather what is pending;
// a leaf another instance integrated answers the waiter too; stop answers everyone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describeStores, openStore, PG_URL } from '../harness.ts';
import type { Db } from '../../src/db/types.ts';
import { createIntegrator } from '../../src/tlog/integrator.ts';
import { sequenceLeaf } from '../../src/tlog/sequence.ts';
import { integrateBatch, INTEGRATE_LOCK_SQL } from '../../src/tlog/integrate.ts';
import { logSize } from '../../src/tlog/store.ts';
import { issuerHeadKeys } from '../../src/proof/keys.ts';

let n = 0;
async function commitLeaf(db: Db): Promise<string> {
  const id = `w${n++}`;
  const s = sequenceLeaf(id, randomBytes(32).toString('hex'));
  await db.tx((tx) => tx.query(s.text, s.params));
  return id;
}

describeStores('log integrator', (h) => {
  test('20 closings committed at once are answered true, integrated in fewer batches than closings', async () => {
    const batches: number[] = [];
    const it = createIntegrator(h().db, { keys: issuerHeadKeys, max: 1000, waitMs: 10_000, onBatch: (d) => batches.push(d.length) });
    const oks = await Promise.all(Array.from({ length: 20 }, async () => it.settled([await commitLeaf(h().db)])));
    assert.deepEqual(oks, Array(20).fill(true));
    assert.equal(
      batches.reduce((a, b) => a + b, 0),
      20,
    );
    assert.ok(batches.length < 20, `${batches.length} batches for 20 leaves`);
    assert.equal(await logSize(h().db), 20);
    await it.stop();
  });

  test("a leaf integrated by another integrator (another instance) answers this one's waiter", async () => {
    const it = createIntegrator(h().db, { keys: issuerHeadKeys, max: 1000, waitMs: 10_000 });
    const id = await commitLeaf(h().db);
    await integrateBatch(h().db, { keys: issuerHeadKeys, max: 1000 });
    assert.equal(await it.settled([id]), true);
    await it.stop();
  });

  test("drain integrates leftovers nobody waits for (a crashed instance's), and stop answers waiters false", async () => {
    const it = createIntegrator(h().db, { keys: issuerHeadKeys, max: 3, waitMs: 10_000 });
    for (let i = 0; i < 7; i++) await commitLeaf(h().db);
    const before = await logSize(h().db);
    await it.drain();
    assert.equal(await logSize(h().db), before + 7, 'three batches of at most 3');
    await it.stop();
    assert.equal(await it.settled(['never']), false);
  });
});

if (PG_URL) {
  test('[postgres] the wait is bounded: with the integration lock held elsewhere a closing is answered false in time, then integrated', async () => {
    const s = await openStore('postgres', { max: 4 });
    const it = createIntegrator(s.db, { keys: issuerHeadKeys, max: 1000, waitMs: 200 });
    try {
      const id = await commitLeaf(s.db);
      const t0 = Date.now();
      const { ok } = await s.db.tx(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(${INTEGRATE_LOCK_SQL})`);
        return { ok: await it.settled([id]) };
      });
      assert.equal(ok, false);
      assert.ok(Date.now() - t0 < 2000, `answered after ${Date.now() - t0} ms`);
      await it.drain();
      assert.equal(await it.settled([id]), true);
      assert.equal(await logSize(s.db), 1);
    } finally {
      await it.stop();
      await s.drop();
    }
  });
}
