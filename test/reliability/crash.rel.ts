// Crash recovery: the real service under a load of mixed lifecycles, SIGKILLed at random moments
// ten times; after every restart the whole service is audited (test/reliability/lib.ts audit()).
// Runs on embedded PGlite (DATA_DIR in a temp dir) and, with TEST_DATABASE_URL, on Postgres (a
// throwaway schema reached through the URL's search_path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { PG_URL } from '../harness.ts';
import { receiver, type Receiver } from '../webhooks/helpers.ts';
import { verifyWebhook } from '@escrow-settlement/client';
import { audit, caller, CLOSED, counts, ok, pgSchema, report, rssMb, sleep } from './lib.ts';
import { Load } from './load.ts';

const ROUNDS = Number(process.env.RELIABILITY_KILLS ?? 10);
const SWEEP_MS = 150;
const WEBHOOK_TIMEOUT_MS = 1000;
const FAILURE_LINES =
  /"msg":"(request failed|sweep failed|sweep could not close an escrow|webhook claim failed|webhook delivery could not be recorded|adapter error)"/;

async function crashRun(store: 'pglite' | 'postgres') {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-crash-'));
  const pg = store === 'postgres' ? await pgSchema('crash') : undefined;
  const env: Record<string, string> = {
    DATA_DIR: dir,
    ...(pg ? { DATABASE_URL: pg.url } : {}),
    SWEEP_INTERVAL_MS: String(SWEEP_MS),
    WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
    WEBHOOK_BACKOFF_MS: '50,100,200,400,800,1600,3200',
  };
  const receivers: Receiver[] = [await receiver(), await receiver()];
  const procs: Proc[] = [];
  const start = async () => {
    const p = await startService(TSX, env, 90_000);
    procs.push(p);
    counts.restarts++;
    return p;
  };
  const seen = new Map<Receiver, Set<string>>();
  const anomalies: string[] = [];
  const statuses: Record<string, number> = {};
  let matters = 0;
  let clockAdvances = 0;
  const rounds: string[] = [];
  try {
    let proc = await start();
    let call = caller(proc.url);
    let signingKey = '';
    for (const rx of receivers) signingKey = (await ok(call, 'POST', '/v1/webhooks', { url: rx.url }, 201)).signingKey;
    for (let round = 1; round <= ROUNDS; round++) {
      const load = new Load(call, { workers: 4, clockEveryMs: 500, advanceSeconds: 45 });
      load.start();
      const killAfter = 800 + Math.floor(Math.random() * 3200);
      await sleep(killAfter);
      rssMb(proc.child.pid!);
      proc.child.kill('SIGKILL');
      await proc.exited;
      counts.kills++;
      await load.stop();
      matters += load.stats.matters;
      clockAdvances += load.stats.clockAdvances;
      anomalies.push(...load.stats.anomalies);
      for (const [k, v] of Object.entries(load.stats.statuses)) statuses[k] = (statuses[k] ?? 0) + v;

      const t0 = Date.now();
      proc = await start();
      const startMs = Date.now() - t0;
      call = caller(proc.url);
      const a = await audit(call, { sweepIntervalMs: SWEEP_MS, receivers, seen, webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
      rounds.push(
        `round ${round}: killed after ${killAfter} ms, ${load.stats.matters} matters, restart ${startMs} ms; audit: ${a.escrows} escrows, ${a.closed} closed, ${a.proofs} proofs, ${a.events} events, ${a.retried} custody retries, sweep ${a.sweepWaitMs} ms, webhooks ${a.webhookWaitMs} ms, rss ${rssMb(proc.child.pid!)} MB`,
      );
    }
    // Every deadline passes: four days on, only never-funded escrows may stay open.
    await ok(call, 'POST', '/v1/sandbox/clock', { advanceSeconds: 4 * 86_400 });
    const last = await audit(call, { sweepIntervalMs: SWEEP_MS, receivers, seen, webhookTimeoutMs: WEBHOOK_TIMEOUT_MS });
    const { escrows } = await ok(call, 'GET', '/v1/escrows');
    const open = escrows.filter((e: any) => !CLOSED.has(e.state) && e.state !== 'created');
    assert.deepEqual(
      open.map((e: any) => `${e.id} ${e.state} ${JSON.stringify(e.custody)}`),
      [],
      'after every deadline passed, only never-funded escrows are open',
    );
    rounds.push(`final: ${last.escrows} escrows, ${last.closed} closed, ${last.proofs} proofs, ${last.events} events`);
    // Deliveries verify against the pinned key (a sample of 200 per receiver).
    for (const rx of receivers) for (const g of rx.got.slice(-200)) assert.equal(verifyWebhook(g.body, g.headers, signingKey).ok, true);
    for (const rx of receivers) counts.webhookDeliveries += rx.got.length;
    assert.deepEqual(anomalies, [], 'every request of the load got an answer its flow allows');
    assert.equal(await proc.stop('SIGTERM'), 0, proc.stderr());
    for (const p of procs) {
      const bad = p
        .stderr()
        .split('\n')
        .filter((l) => FAILURE_LINES.test(l));
      assert.deepEqual(bad, [], 'no process logged a failure');
    }
    process.stdout.write(`# ${store}: ${rounds.join('\n# ')}\n`);
    const fivexx = Object.entries(statuses).filter(([k]) => / 5\d\d$/.test(k) && !/ 502$/.test(k));
    assert.deepEqual(fivexx, [], 'no 5xx other than the injected custody failures');
  } finally {
    report(`crash recovery [${store}]`, { matters, clockAdvances });
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    for (const rx of receivers) await rx.close();
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

test(`crash recovery on PGlite: ${ROUNDS} SIGKILLs under mixed load, audited after every restart`, { timeout: 360_000 }, () =>
  crashRun('pglite'),
);

test(
  `crash recovery on Postgres: ${ROUNDS} SIGKILLs under mixed load, audited after every restart`,
  { timeout: 360_000, skip: !PG_URL && 'needs TEST_DATABASE_URL' },
  () => crashRun('postgres'),
);
