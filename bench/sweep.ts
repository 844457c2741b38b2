// Run 4: the deadline sweep closing N expired escrows (seeded directly in SQL, state funded, deadline
// passed), against its floor (the same statements straight to the database), and with two service
// instances (two apps on two pools, one schema) sweeping together: exactly once is asserted.
import type { Db } from '../src/db/types.ts';
import { sweepOnce, SWEEP_BATCH } from '../src/jobs/sweep.ts';
import { readLocked } from '../src/escrow/escrowRow.ts';
import type { App } from '../src/app.ts';
import { entries, FLOOR_SQL as SQL, floorClose, ids, PAYLOAD, TERMS } from './lifecycle.ts';
import {
  backendCpu,
  backendCpuDelta,
  dist,
  floorAppName,
  inProcessApp,
  log,
  rawDb,
  round,
  samePool,
  sleep,
  storeAppName,
  type Dist,
  type Store,
} from './lib.ts';
import { seedFunded } from './seed.ts';

const BATCH = SWEEP_BATCH; // what the running service sweeps per pass (src/jobs/sweep.ts)

export interface SweepRun {
  escrows: number;
  ms: number;
  perSecond: number;
  /** Passes run side by side (each its own transaction of BATCH escrows, SKIP LOCKED). */
  passes: number;
  /**
   * CPU per closing, ms: this process (the in-process service, or the floor's client) and the
   * Postgres backends serving it; with `passes` > 1 the machine's cores are what bounds the rate.
   */
  cpuPerClose: { process: number; backends: number; total: number };
}

/** Runs `fn` with the CPU of this process and of the backends of `appName` measured around it. */
async function withCpu<T>(appName: string, n: number, fn: () => Promise<T>): Promise<[T, SweepRun['cpuPerClose']]> {
  const be0 = await backendCpu(appName);
  const u0 = process.cpuUsage();
  const out = await fn();
  const u = process.cpuUsage(u0);
  const backends = backendCpuDelta(be0, await backendCpu(appName));
  const proc = (u.user + u.system) / 1000;
  return [out, { process: round(proc / n, 3), backends: round(backends / n, 3), total: round((proc + backends) / n, 3) }];
}

/** `passes` loops of sweepOnce side by side until one finds nothing due. */
async function sweepLoops(app: App, passes: number): Promise<void> {
  await Promise.all(
    Array.from({ length: passes }, async () => {
      for (;;) {
        const r = await sweepOnce(app.svc, { batch: BATCH, onError: (id, err) => log(`sweep error on ${id}: ${err}`) });
        if (r.errors > 0 || r.failed > 0) throw new Error(`sweep: ${r.errors} errors, ${r.failed} custody failures`);
        if (r.ran && r.closed === 0) break;
      }
    }),
  );
  // The sweep is done when its leaves are in the log: timed until the integrator has them all.
  await app.svc.proofLog.drain();
}

export interface SweepPairRun extends Omit<SweepRun, 'passes' | 'cpuPerClose'> {
  byInstance: [number, number];
  skippedPasses: number;
  proofs: number;
  distinctEscrows: number;
  logSize: number;
  refunded: number;
  exactlyOnce: boolean;
}

async function counts(db: Db) {
  const [r] = await db.query(
    `SELECT (SELECT count(*) FROM proofs)::int AS proofs, (SELECT count(DISTINCT escrow_id) FROM proofs)::int AS distinct_escrows,
            (SELECT size FROM log_state WHERE id = 1)::int AS log_size, (SELECT count(*) FROM escrows WHERE state = 'refunded')::int AS refunded,
            (SELECT count(*) FROM log_nodes WHERE level = 0)::int AS leaves`,
  );
  return {
    proofs: r.proofs as number,
    distinctEscrows: r.distinct_escrows as number,
    logSize: r.log_size as number,
    refunded: r.refunded as number,
    leaves: r.leaves as number,
  };
}

async function call(app: App, method: string, path: string, body?: unknown): Promise<any> {
  const res = await app.fetch(
    new Request(`http://bench.local${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    }),
    { ip: '127.0.0.1' },
  );
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * A user's delivery while the sweep works: one escrow at a time through app.fetch (same process as
 * the sweeper, as on a service instance), timing only the delivery (the step that closes a matter
 * and so appends to the log, like every sweep close).
 */
async function deliveryProbe(app: App, until: () => boolean, max = Infinity): Promise<number[]> {
  const payer = (await call(app, 'POST', '/v1/agents', { label: 'payer' })).id;
  const payee = (await call(app, 'POST', '/v1/agents', { label: 'payee' })).id;
  const lat: number[] = [];
  while (!until() && lat.length < max) {
    const e = await call(app, 'POST', '/v1/escrows', {
      amount: '1',
      asset: 'USDC',
      payerAgentId: payer,
      payeeAgentId: payee,
      terms: TERMS,
    });
    await call(app, 'POST', `/v1/escrows/${e.id}/fund`);
    const t = performance.now();
    await call(app, 'POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: PAYLOAD });
    lat.push(performance.now() - t);
    await sleep(5);
  }
  return lat;
}

/**
 * The service's sweep of n expired escrows. With `probe`, a user's deliveries run in the same process
 * meanwhile (their latency is the measure; they also take the sweep's event loop, so the sweep's own
 * rate against its floor is measured in a run without them).
 */
export async function sweepService(
  store: Store,
  n: number,
  idleProbes: number,
  probeDuring = true,
  passes = 1,
): Promise<SweepRun & { deliverIdle: Dist; deliverDuringSweep: Dist }> {
  await seedFunded(store.db, n, 'swp', 'past');
  const app = inProcessApp(store.db);
  // The delivery probe alone first (the seeded escrows are not swept yet: nothing else runs).
  const deliverIdle = dist(probeDuring ? await deliveryProbe(app, () => false, idleProbes) : []);
  let sweeping = true;
  const probe = probeDuring ? deliveryProbe(app, () => !sweeping) : Promise.resolve([]);
  const t = performance.now();
  let cpuPerClose: SweepRun['cpuPerClose'];
  try {
    [, cpuPerClose] = await withCpu(storeAppName(store), n, () => sweepLoops(app, passes));
  } finally {
    sweeping = false;
  }
  const ms = performance.now() - t;
  const deliverDuringSweep = dist(await probe);
  const c = await counts(store.db);
  const probes = deliverIdle.n + deliverDuringSweep.n;
  if (c.refunded !== n || c.proofs !== n + probes || c.logSize !== n + probes)
    throw new Error(`sweep closed ${c.refunded}/${n} (proofs ${c.proofs}, log ${c.logSize}, probes ${probes})`);
  return { escrows: n, ms, perSecond: (n * 1000) / ms, passes, cpuPerClose, deliverIdle, deliverDuringSweep };
}

/**
 * sweepOnce's statements (src/jobs/sweep.ts with closeMatter's timeout path: the pass's locked
 * escrows read in one statement, then each close in a savepoint as the service's), fixed values;
 * leaf indices from a plain sequence and no integrator.
 */
export async function sweepFloor(store: Store, n: number, passes = 1): Promise<SweepRun> {
  await seedFunded(store.db, n, 'swp', 'past');
  const db = rawDb(store);
  await db.query(SQL.leafSeq);
  let seq = 0;
  const t = performance.now();
  const [, cpuPerClose] = await withCpu(floorAppName(store), n, () =>
    Promise.all(
      Array.from({ length: passes }, async () => {
        for (;;) {
          const closed = await db.tx(async (tx) => {
            const due = await tx.query<{ id: string }>(SQL.due, [BATCH]);
            const locked = await readLocked(
              tx,
              due.map((d) => d.id),
            );
            for (const e of locked)
              await tx.savepoint(async (sp) => {
                const n2 = ids(seq++);
                const id = e.id;
                await floorClose(sp, id, e, {
                  n: n2,
                  outcome: 'refunded',
                  verdict: 'none',
                  payer: '25500000',
                  payee: '0',
                  writes: [],
                  trail: entries(2, [
                    { event: 'escrow.timeout', body: { stage: 'deliver', outcome: 'refunded' } },
                    { event: 'proof.issued', body: { proofId: n2.prf, outcome: 'refunded' } },
                  ]),
                });
              });
            return due.length;
          });
          if (closed === 0) break;
        }
      }),
    ),
  );
  const ms = performance.now() - t;
  const c = await counts(store.db);
  if (c.proofs !== n || c.refunded !== n) throw new Error(`floor sweep closed ${c.refunded}/${n}`);
  return { escrows: n, ms, perSecond: (n * 1000) / ms, passes, cpuPerClose };
}

/** Two instances (two apps, two pools, one schema) sweeping at once, each as its ticker would. */
export async function sweepTwoInstances(store: Store, n: number): Promise<SweepPairRun> {
  await seedFunded(store.db, n, 'swp', 'past');
  const apps = [inProcessApp(store.db), inProcessApp(samePool(store))];
  const skippedPasses = 0; // passes no longer take a sweep lock: none is skipped
  const t = performance.now();
  const byInstance = await Promise.all(
    apps.map(async (app) => {
      let closed = 0;
      for (;;) {
        const r = await sweepOnce(app.svc, { batch: BATCH, onError: (id, err) => log(`sweep error on ${id}: ${err}`) });
        if (r.errors > 0 || r.failed > 0) throw new Error(`sweep: ${r.errors} errors, ${r.failed} custody failures`);
        closed += r.closed;
        if (r.closed === 0) return closed;
      }
    }),
  );
  await Promise.all(apps.map((app) => app.svc.proofLog.drain()));
  const ms = performance.now() - t;
  const c = await counts(store.db);
  const exactlyOnce =
    c.proofs === n &&
    c.distinctEscrows === n &&
    c.logSize === n &&
    c.leaves === n &&
    c.refunded === n &&
    byInstance[0] + byInstance[1] === n;
  return { escrows: n, ms, perSecond: (n * 1000) / ms, byInstance: byInstance as [number, number], skippedPasses, ...c, exactlyOnce };
}
