// Two started processes on one Postgres schema, both running the sweep and the webhook sender,
// under a mixed load whose every request goes to either instance at random: exactly one proof per
// escrow, each (event, url) delivered exactly once, no deadlock, nothing logged as a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { PG_URL } from '../harness.ts';
import { receiver, type Receiver } from '../webhooks/helpers.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { audit, caller, CLOSED, counts, ok, pgDatabase, report, rssMb, sleep } from './lib.ts';
import { Load } from './load.ts';

const SWEEP_MS = 100;
const LOAD_MS = Number(process.env.RELIABILITY_LOAD_MS ?? 12_000);
const FAILURE_LINES =
  /"msg":"(request failed|sweep failed|sweep could not close an escrow|webhook claim failed|webhook delivery could not be recorded|adapter error)"|deadlock/i;

/** Deadlocks Postgres counted in the test's own database (pg_stat_database). */
async function deadlocks(name: string): Promise<number> {
  const db = openPostgres(PG_URL!, { max: 1 });
  try {
    const [r] = await db.query<{ n: string }>('SELECT coalesce(deadlocks, 0)::text AS n FROM pg_stat_database WHERE datname = $1', [name]);
    return Number(r?.n ?? 0);
  } finally {
    await db.close();
  }
}

test('two instances on one Postgres under load: one proof per escrow, every (event, url) once, no deadlock, no failure logged', {
  timeout: 300_000,
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  // A database of its own, so its deadlock counter counts only this test.
  const pg = await pgDatabase('inst');
  const dirs = [mkdtempSync(join(tmpdir(), 'escrow-inst-a-')), mkdtempSync(join(tmpdir(), 'escrow-inst-b-'))];
  const receivers: Receiver[] = await Promise.all([receiver(), receiver(), receiver()]);
  const procs: Proc[] = [];
  let matters = 0;
  let contended = 0;
  try {
    const deadlocksBefore = await deadlocks(pg.name);
    const env = (dir: string) => ({
      DATA_DIR: dir,
      DATABASE_URL: pg.url,
      SWEEP_INTERVAL_MS: String(SWEEP_MS),
      WEBHOOK_TIMEOUT_MS: '3000',
      WEBHOOK_BACKOFF_MS: '50,100,200,400',
    });
    // Both start at once: migrations run under the advisory lock.
    procs.push(...(await Promise.all(dirs.map((d) => startService(TSX, env(d), 90_000)))));
    counts.restarts += 2;
    const urls = procs.map((p) => p.url);
    const call = caller(urls);
    for (const rx of receivers) await ok(call, 'POST', '/v1/webhooks', { url: rx.url }, 201);

    const load = new Load(call, { workers: 6, clockEveryMs: 400, advanceSeconds: 45 });
    load.start();
    // Contention beside the load: two deliveries and two refunds of one escrow at once, split
    // across the instances; at most one wins (a 502 is an injected custody fault of the load).
    const [A, B] = procs.map((p) => caller(p.url));
    const payer = (await ok(A, 'POST', '/v1/agents', {}, 201)).id;
    const payee = (await ok(A, 'POST', '/v1/agents', {}, 201)).id;
    const until = Date.now() + LOAD_MS;
    while (Date.now() < until) {
      const e = await ok(
        A,
        'POST',
        '/v1/escrows',
        {
          amount: '1',
          asset: 'USDC',
          terms: { description: 't', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
          payerAgentId: payer,
          payeeAgentId: payee,
        },
        201,
      );
      await ok(B, 'POST', `/v1/escrows/${e.id}/fund`);
      const rs = await Promise.all([
        A('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 't' } }),
        B('POST', `/v1/escrows/${e.id}/refund`),
        B('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 't' } }),
        A('POST', `/v1/escrows/${e.id}/refund`),
      ]);
      assert.ok(
        rs.every((r) => [200, 201, 409, 502].includes(r.status)),
        rs.map((r) => `${r.status} ${r.text}`).join('\n'),
      );
      assert.ok(rs.filter((r) => r.status === 200 || r.status === 201).length <= 1, rs.map((r) => r.status).join(','));
      contended++;
    }
    for (const p of procs) rssMb(p.child.pid!);
    await load.stop();
    matters = load.stats.matters;
    const logged = () =>
      procs.flatMap((p) =>
        p
          .stderr()
          .split('\n')
          .filter((l) => FAILURE_LINES.test(l))
          .map((l) => l.slice(0, 600)),
      );
    assert.deepEqual(load.stats.anomalies, [], `every request of the load got an answer its flow allows; logged:\n${logged().join('\n')}`);
    const fivexx = Object.entries(load.stats.statuses).filter(([k]) => / 5\d\d$/.test(k) && !/ 502$/.test(k));
    assert.deepEqual(fivexx, [], 'no 5xx other than the injected custody failures');

    // Every deadline passes while both sweeps run; then the audit (requests to both instances).
    await ok(call, 'POST', '/v1/sandbox/clock', { advanceSeconds: 4 * 86_400 });
    const seen = new Map<Receiver, Set<string>>();
    const a = await audit(call, { sweepIntervalMs: SWEEP_MS, receivers, seen, webhookTimeoutMs: 3000 });
    const { escrows } = await ok(call, 'GET', '/v1/escrows');
    assert.deepEqual(
      escrows.filter((e: any) => !CLOSED.has(e.state) && e.state !== 'created').map((e: any) => e.id),
      [],
      'only never-funded escrows stay open',
    );

    // Exactly once per (event, url): no webhook-id twice at any receiver, and nothing left queued.
    for (const rx of receivers) {
      const ids = rx.got.map((g) => g.headers['webhook-id']);
      const dup = ids.filter((id, i) => ids.indexOf(id) !== i);
      assert.deepEqual(dup, [], `no event delivered twice to ${rx.url}`);
      assert.equal(ids.length, a.events, `${rx.url} got every event`);
      counts.webhookDeliveries += ids.length;
    }
    const db = openPostgres(pg.url, { max: 1 });
    try {
      const [r] = await db.query<Record<string, number>>(`SELECT
          (SELECT count(*) FROM (SELECT escrow_id FROM proofs GROUP BY escrow_id HAVING count(*) > 1) d)::int AS doubled,
          (SELECT count(*) FROM proofs)::int AS proofs, (SELECT size FROM log_state)::int AS log,
          (SELECT count(*) FROM escrows WHERE state IN ('settled', 'resolved', 'refunded'))::int AS closed,
          (SELECT count(*) FROM outbox)::int AS outbox, (SELECT count(*) FROM dead_letters)::int AS dead,
          (SELECT count(*) FROM custody WHERE status = 'confirmed')::int AS confirmed`);
      assert.deepEqual(r, { doubled: 0, proofs: a.proofs, log: a.proofs, closed: a.closed, outbox: 0, dead: 0, confirmed: a.closed });
    } finally {
      await db.close();
    }
    for (const p of procs) assert.equal(await p.stop('SIGTERM'), 0, p.stderr());
    assert.deepEqual(logged(), [], 'no failure logged');
    await sleep(1500); // backends report their statistics about once a second
    assert.equal(await deadlocks(pg.name), deadlocksBefore, 'Postgres counted no deadlock in the database');
    process.stdout.write(
      `# two instances: ${matters} matters, ${contended} contended escrows, ${a.escrows} escrows, ${a.closed} closed, ${a.events} events x ${receivers.length} receivers, sweep ${a.sweepWaitMs} ms, webhooks ${a.webhookWaitMs} ms\n`,
    );
  } finally {
    report('two instances on one Postgres', { matters, contended });
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    for (const rx of receivers) await rx.close();
    await pg.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});
