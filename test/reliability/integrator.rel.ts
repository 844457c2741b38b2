// The log's sequence → integrate split under crashes, against real started processes on Postgres:
// a process SIGKILLed after its closings committed and before their leaves were integrated; one
// SIGKILLed in the middle of an integration batch; two processes integrating side by side. After
// each: the log is dense, every closed matter has exactly one leaf, every proof's inclusion and
// the consistency proofs between heads recorded across batches verify (independent naive RFC 6962).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { PG_URL } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import type { Db } from '../../src/db/types.ts';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { caller, CLOSED, counts, leafHashOf, merkleRoot, ok, pgSchema, report, sleep, type Call } from './lib.ts';

const hexBytes = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));
type Head = { logSize: number; rootHash: string };

/** One lifecycle through HTTP: create, fund, a passing delivery that closes the matter. */
async function lifecycle(call: Call, payer: string, payee: string): Promise<{ escrowId: string; proofId: string }> {
  const e = await ok(
    call,
    'POST',
    '/v1/escrows',
    { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer, payeeAgentId: payee },
    201,
  );
  await ok(call, 'POST', `/v1/escrows/${e.id}/fund`);
  const d = await ok(call, 'POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 'report' } }, 201);
  assert.ok(d.proof, 'the passing delivery closed the matter');
  counts.escrows++;
  return { escrowId: e.id, proofId: d.proof.id };
}

/** The log of a quiet service, audited: dense, one leaf per closed matter, naive root, proofs verify. */
async function auditLog(call: Call, admin: Db, heads: Head[]): Promise<Head> {
  const [{ pending }] = await admin.query<{ pending: number }>('SELECT count(*)::int AS pending FROM log_pending');
  assert.equal(pending, 0, 'nothing is left pending');
  const head: Head = await ok(call, 'GET', '/v1/log/head');
  const entries: any[] = [];
  while (entries.length < head.logSize) {
    entries.push(
      ...(await ok(call, 'GET', `/v1/log/entries?start=${entries.length}&end=${Math.min(head.logSize, entries.length + 1000)}`)).entries,
    );
  }
  assert.equal(entries.length, head.logSize);
  entries.forEach((en, i) => assert.equal(en.leafIndex, i, 'leaf indices are dense'));
  const leaves = entries.map((en) => leafHashOf(en.proof));
  assert.equal(merkleRoot(leaves).toString('hex'), head.rootHash, 'the head root equals a naive rebuild of the leaves');
  const { escrows } = await ok(call, 'GET', '/v1/escrows');
  const closed = escrows.filter((e: any) => CLOSED.has(e.state));
  const byEscrow = new Map<string, number>();
  for (const en of entries) byEscrow.set(en.proof.escrowId, (byEscrow.get(en.proof.escrowId) ?? 0) + 1);
  for (const e of closed) assert.equal(byEscrow.get(e.id), 1, `closed ${e.id} has exactly one leaf`);
  assert.equal(byEscrow.size, closed.length, 'no leaf for a matter that is not closed');
  const [{ n }] = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM proofs WHERE leaf_index IS NULL');
  assert.equal(n, 0, 'every proof knows its leaf index');
  // Inclusion of a sample of leaves, and consistency from every head recorded earlier.
  for (let i = 0; i < entries.length; i += Math.max(1, Math.floor(entries.length / 12))) {
    const inc = await ok(call, 'GET', `/v1/log/proof/${entries[i].proof.id}`);
    assert.ok(
      verifyInclusion(leaves[i], inc.leafIndex, inc.logSize, inc.auditPath.map(hexBytes), hexBytes(inc.rootHash)),
      `inclusion of leaf ${i}`,
    );
    counts.proofsChecked++;
  }
  for (const h of heads.filter((x) => x.logSize > 0 && x.logSize <= head.logSize)) {
    const c = await ok(call, 'GET', `/v1/log/consistency/${h.logSize}/${head.logSize}`);
    assert.ok(
      verifyConsistency(h.logSize, head.logSize, hexBytes(h.rootHash), hexBytes(head.rootHash), c.path.map(hexBytes)),
      `consistency ${h.logSize} → ${head.logSize}`,
    );
  }
  return head;
}

describe('log integration under crashes [postgres]', { skip: !PG_URL && 'TEST_DATABASE_URL is not set' }, () => {
  let pg: Awaited<ReturnType<typeof pgSchema>>;
  let admin: Db;
  let dir: string;
  const procs: Proc[] = [];
  const heads: Head[] = [];
  let payer = '';
  let payee = '';
  const start = async (extra: Record<string, string> = {}) => {
    const p = await startService(TSX, { DATA_DIR: dir, DATABASE_URL: pg.url, ...extra }, 90_000);
    procs.push(p);
    counts.restarts++;
    return p;
  };
  const kill = async (p: Proc) => {
    p.child.kill('SIGKILL');
    await p.exited;
    counts.kills++;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'escrow-integrator-'));
    pg = await pgSchema('integ');
    admin = openPostgres(PG_URL!, { schema: pg.schema, max: 2 });
  });
  after(async () => {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) await kill(p);
    await admin.close();
    await pg.drop();
    rmSync(dir, { recursive: true, force: true });
    report('integrator');
  });

  test('killed after its closings committed and before they were integrated: the next process integrates them', async () => {
    const p1 = await start({ LOG_INTEGRATE_WAIT_MS: '300' });
    const call = caller(p1.url);
    payer = (await ok(call, 'POST', '/v1/agents', { label: 'payer' }, 201)).id;
    payee = (await ok(call, 'POST', '/v1/agents', { label: 'payee' }, 201)).id;
    for (let i = 0; i < 3; i++) await lifecycle(call, payer, payee);
    heads.push(await ok(call, 'GET', '/v1/log/head'));
    assert.equal(heads[0].logSize, 3, 'closings returned after their leaves were integrated');
    // Another party holds the integration lock: closings commit, their leaves cannot be integrated.
    const holder = openPostgres(PG_URL!, { schema: pg.schema, max: 1 });
    await holder.query(`SELECT pg_advisory_lock(hashtext(current_schema() || ':log-integrate'))`);
    try {
      const done = await Promise.all(Array.from({ length: 6 }, () => lifecycle(call, payer, payee)));
      // Past LOG_INTEGRATE_WAIT_MS the closing returned its proof; its inclusion is not there yet.
      const r = await call('GET', `/v1/log/proof/${done[0].proofId}`);
      assert.equal(r.status, 503, r.text);
      assert.equal(r.body.error.code, 'unavailable');
      assert.equal(r.headers['retry-after'], '1');
      await kill(p1);
      const [{ pending }] = await admin.query<{ pending: number }>('SELECT count(*)::int AS pending FROM log_pending');
      assert.equal(pending, 6, 'the six committed leaves are pending');
    } finally {
      await holder.query(`SELECT pg_advisory_unlock(hashtext(current_schema() || ':log-integrate'))`);
      await holder.close();
    }
    const p2 = await start();
    const call2 = caller(p2.url);
    for (let t = 0; t < 100 && (await ok(call2, 'GET', '/v1/log/head')).logSize < 9; t++) await sleep(50);
    heads.push(await auditLog(call2, admin, heads));
    assert.equal(heads[1].logSize, 9);
    await p2.stop();
  });

  test('killed in the middle of an integration batch: the batch is atomic (it rolls back, or its one statement commits whole) and the next process integrates the rest', async () => {
    const p1 = await start({ LOG_INTEGRATE_WAIT_MS: '300' });
    const call = caller(p1.url);
    // Hold the log's size row: the integrator takes its lock and its leaves, writes the nodes, then
    // blocks on the size update, in the middle of its batch.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holding = admin.tx(async (tx) => {
      await tx.query('SELECT size FROM log_state WHERE id = 1 FOR UPDATE');
      locked();
      await released;
    });
    await isLocked;
    try {
      await Promise.all(Array.from({ length: 5 }, () => lifecycle(call, payer, payee)));
      let waiting = 0;
      for (let t = 0; t < 100 && waiting === 0; t++) {
        [{ waiting }] = await admin.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE application_name = 'escrow-settlement' AND wait_event_type = 'Lock' AND query LIKE '%UPDATE log_state SET size%'`,
        );
        if (waiting === 0) await sleep(20);
      }
      assert.equal(waiting, 1, 'an integration batch is blocked mid-way on the size row');
      await kill(p1);
    } finally {
      release();
      await holding;
    }
    // A batch from the integrator's tip is one statement, its own transaction (docs/statements.md §3):
    // once the size row is free the dead client's backend finishes it and it commits whole; a batch
    // sent as BEGIN … COMMIT never gets its COMMIT and rolls back whole. Either way no leaf is lost or
    // integrated twice: the size and the pending leaves always add up to the five closings.
    let pending = 0;
    let size = 0;
    for (let t = 0; t < 100; t++) {
      const [{ blocked }] = await admin.query<{ blocked: number }>(
        `SELECT count(*)::int AS blocked FROM pg_stat_activity WHERE application_name = 'escrow-settlement' AND query LIKE '%UPDATE log_state SET size%' AND state = 'active'`,
      );
      [{ pending }] = await admin.query<{ pending: number }>('SELECT count(*)::int AS pending FROM log_pending');
      [{ size }] = await admin.query<{ size: number }>('SELECT size::int AS size FROM log_state');
      if (blocked === 0 && size - 9 + pending === 5) break;
      await sleep(50);
    }
    assert.equal(
      size - 9 + pending,
      5,
      `the killed batch is atomic: size ${size} and ${pending} pending leaves account for the five closings`,
    );
    const p2 = await start();
    const call2 = caller(p2.url);
    for (let t = 0; t < 100 && (await ok(call2, 'GET', '/v1/log/head')).logSize < 14; t++) await sleep(50);
    heads.push(await auditLog(call2, admin, heads));
    assert.equal(heads[2].logSize, 14);
    await p2.stop();
  });

  test('two processes closing and integrating side by side, one of them SIGKILLed mid-run, then audited', async () => {
    const [a, b] = [await start(), await start()];
    const calls = [caller(a.url), caller(b.url)];
    const before = heads[heads.length - 1].logSize;
    let stop = false;
    let killing = false;
    let done = 0;
    const failures: string[] = [];
    const workers = Array.from({ length: 8 }, (_, w) =>
      (async () => {
        while (!stop) {
          // Once a is killed, its workers stop: only lifecycles cut short by the kill may fail.
          if (killing && w % 2 === 0) return;
          try {
            await lifecycle(calls[w % 2], payer, payee);
            done++;
          } catch (err) {
            if (!(killing && w % 2 === 0)) failures.push(String(err));
          }
        }
      })(),
    );
    const sampler = (async () => {
      while (!stop) {
        heads.push(await ok(calls[1], 'GET', '/v1/log/head'));
        await sleep(150);
      }
    })();
    await sleep(2500);
    killing = true;
    await kill(a);
    await sleep(1500);
    stop = true;
    await Promise.all([...workers, sampler]);
    assert.deepEqual(failures, [], 'no lifecycle on the surviving process failed');
    // Leaves a's closings committed before the kill are integrated by b's tick.
    const final = await (async () => {
      for (let t = 0; t < 60; t++) {
        const [{ pending }] = await admin.query<{ pending: number }>('SELECT count(*)::int AS pending FROM log_pending');
        if (pending === 0) break;
        await sleep(100);
      }
      return auditLog(calls[1], admin, heads);
    })();
    assert.ok(
      final.logSize >= before + done,
      `${final.logSize} leaves for ${before} + ${done} completed lifecycles (and closings cut short by the kill)`,
    );
    await b.stop();
  });
});
