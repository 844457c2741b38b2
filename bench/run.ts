// `npm run bench`: the service against its floor, row by row, in one process run (docs/performance.md §1).
//
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench   # real Postgres
//   npm run bench                                                              # PGlite fallback
//   BENCH_QUICK=1 npm run bench                                                # smoke-sized run
//
// Prints one table (stdout) and writes it, with every raw number, to bench/results.json (BENCH_OUT).
// On Postgres every run uses throwaway schemas (bench_<pid>_<time>_*) dropped at the end. Sizes and
// durations (defaults in bench/lib.ts CFG): BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_CONCURRENCY,
// BENCH_VERIFY_SECONDS, BENCH_VERIFY_CONNECTIONS, BENCH_CRYPTO_SECONDS, BENCH_LOG_SIZES,
// BENCH_LOG_SAMPLES, BENCH_SWEEP_ESCROWS, BENCH_SWEEP_IDLE_PROBES, BENCH_WEBHOOK_SECONDS,
// BENCH_WEBHOOK_CONCURRENCY, BENCH_WEBHOOK_DRAIN_SECONDS, BENCH_MEMORY_ESCROWS;
// BENCH_NOTE is recorded as is in results.json (e.g. what else ran on the machine);
// GROUP_COMMIT=off runs the service without group commit (src/db/groupCommit.ts; default on) and
// HTTP_BODY=direct with bodies read without a web stream (src/node/adapter.ts); the header says which ran; BENCH_ONLY=lifecycle,verify,log,sweep,webhooks,memory picks runs; BENCH_SERVICE=bundle runs
// dist/escrow-settlement.mjs (npm run build first) instead of `node --import tsx src/main.ts`.
//
// The service runs as a child process (main.ts: node:http + nodeListener on port 0) for runs 1, 2, 5
// and 6, so its RSS and CPU are its own (/proc/<pid>); runs 3 and 4 call src/ in this process.
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { relative } from 'node:path';
import {
  CFG,
  MODE_LABEL,
  ROOT,
  backendCpu,
  backendCpuDelta,
  childTarget,
  cpuWindow,
  dbCounters,
  type CpuSplit,
  cleanup,
  sleep,
  floorAppName,
  log,
  newStore,
  rawDb,
  round,
  rssSampler,
  serviceAppName,
  sessionSampler,
  startChild,
  STORE,
  type Child,
  type SessionStats,
  type Store,
} from './lib.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { floorLifecycle, rawInsertUpdate, serviceLifecycle, STEPS, type LifecycleRun } from './lifecycle.ts';
import { statementsPerLifecycle } from './statements.ts';
import { cryptoCompare, verifyFloor, verifyService } from './verify.ts';
import { logBench } from './log.ts';
import { sweepFloor, sweepService, sweepTwoInstances, type SweepRun } from './sweep.ts';
import { webhookBench } from './webhooks.ts';
import { memoryAfter } from './memory.ts';

interface Row {
  run: string;
  measure: string;
  service: string;
  floor: string;
  ratio: string;
  target: string;
  result: '' | 'PASS' | 'MISS';
}

const rows: Row[] = [];
/** (b − a − less) / n for each counter: a run's counts per lifecycle, the idle service's share taken off. */
const perEach = <T extends Record<string, number>>(a: T, b: T, n: number, less: (k: keyof T) => number = () => 0) =>
  Object.fromEntries(Object.keys(a).map((k) => [k, (b[k] - a[k] - less(k)) / n])) as T;
const perLifecycle = (w: CpuSplit, n: number) => ({
  service: w.serviceMs / n,
  client: w.benchMs / n,
  backends: (w.backendsMs ?? NaN) / n,
  database: w.restMs / n,
  machineCores: w.machineMs / w.elapsedMs,
});
const raw: Record<string, unknown> = {};
const add = (r: Partial<Row> & Pick<Row, 'run' | 'measure'>) =>
  rows.push({ service: '', floor: '', ratio: '', target: '', result: '', ...r });
const pass = (ok: boolean): Row['result'] => (ok ? 'PASS' : 'MISS');
const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
const ms = (p50: number, p99: number) => `${f(p50, 2)} / ${f(p99, 2)} ms`;
/** The rest of the machine's CPU, signed: slightly below 0 when /proc/stat's ticks and the processes' disagree. */
const signed = (n: number) => `${n < 0 ? '−' : '+'}${f(Math.abs(n), 2)}`;
const pctOf = (a: number, b: number) => `${f((a / b) * 100, 0)}%`;
const times = (a: number, b: number) => `${f(a / b, 2)}x`;
const sizeLabel = (n: number) => (n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n));
const STORE_LABEL = STORE === 'postgres' ? 'Postgres' : 'PGlite (fallback: no BENCH_DATABASE_URL; in-memory, one connection)';

/** The service process runs 1, 2 and 5 (a webhook is registered only for run 5, after 1 and 2). */
async function serviceProcess(): Promise<{ child: Child; store: Store | null }> {
  const { target, store } = await childTarget('svc');
  return { child: await startChild(target, { VERIFY_RATE_LIMIT_MAX: '1000000000' }), store };
}

async function lifecycleAndVerify(child: Child, svcStore: Store | null, floorStore: Store | null): Promise<void> {
  const wantLifecycle = CFG.only.includes('lifecycle');
  const wantVerify = CFG.only.includes('verify');
  if (!wantLifecycle && !wantVerify) return;
  const service = await serviceLifecycle(child.url);
  if (wantLifecycle && floorStore) {
    const floorDb = rawDb(floorStore);
    const floor = await floorLifecycle(floorDb);
    const idle = child.rss();
    add({
      run: '6 memory',
      measure: `service idle RSS after start (${STORE === 'postgres' ? 'Postgres store' : 'PGlite in the process'})`,
      service: `${f(idle.rssMb)} MB`,
    });
    const sampler = rssSampler(child);
    const runs: Array<{ service: LifecycleRun; floor: LifecycleRun; sessions: { service: SessionStats; floor: SessionStats } }> = [];
    // The database's commits and WAL flushes per second with the service idle (its sweeper, outbox and
    // integrator polling, the samplers): taken off each run's counts below, over the run's window.
    const idle0 = await dbCounters();
    const idleT0 = performance.now();
    const idle1 = await dbCounters();
    const idleRate = perEach(idle0, idle1, (performance.now() - idleT0) / 1000);
    raw.databaseIdlePerSecond = idleRate;
    for (const c of CFG.concurrency) {
      log(`lifecycle: concurrency ${c} (${CFG.seconds} s each side)`);
      if (CFG.warmupSeconds > 0) await service.run(c, CFG.warmupSeconds);
      let sessions = sessionSampler(serviceAppName(svcStore));
      const cpu0 = child.cpuMs();
      let win = cpuWindow([child.pid]);
      let be0 = await backendCpu(serviceAppName(svcStore));
      const db0 = await dbCounters();
      const dbT0 = performance.now();
      const s = await service.run(c, CFG.seconds);
      const svcBackends = backendCpuDelta(be0, await backendCpu(serviceAppName(svcStore)));
      const db1 = await dbCounters();
      const idleS = (performance.now() - dbT0) / 1000;
      s.database = perEach(db0, db1, s.lifecycles, (k) => idleRate[k] * idleS);
      const cpu = child.cpuMs() - cpu0;
      s.serviceCpu = { msPerLifecycle: cpu / s.lifecycles, coreShare: cpu / s.elapsedMs };
      s.cpuPerLifecycle = perLifecycle({ ...win.stop(), backendsMs: svcBackends }, s.lifecycles);
      const svcSessions = await sessions.stop();
      if (CFG.warmupSeconds > 0) await floor.run(c, CFG.warmupSeconds);
      sessions = sessionSampler(floorAppName(floorStore));
      win = cpuWindow([]);
      be0 = await backendCpu(floorAppName(floorStore));
      const fl = await floor.run(c, CFG.seconds);
      const floorBackends = backendCpuDelta(be0, await backendCpu(floorAppName(floorStore)));
      fl.cpuPerLifecycle = perLifecycle({ ...win.stop(), backendsMs: floorBackends }, fl.lifecycles);
      const floorSessions = await sessions.stop();
      runs.push({ service: s, floor: fl, sessions: { service: svcSessions, floor: floorSessions } });
      log(`lifecycle c=${c}: service ${f(s.perSecond)}/s, floor ${f(fl.perSecond)}/s`);
    }
    // The machine's raw write rate, beside: one INSERT + one UPDATE per transaction at c=16.
    const rawTx = await rawInsertUpdate(floorDb, 16, CFG.seconds);
    raw.rawInsertUpdate = rawTx;
    // The service's c=16 lifecycles/s against it: one number that compares across machines.
    const c16 = runs.find((r) => r.service.concurrency === 16);
    add({
      run: '1 lifecycle',
      measure: `raw INSERT+UPDATE transactions/s at c=16 (postgres.js, the machine's write floor)${c16 ? ", against the service's c=16 lifecycles/s" : ''}`,
      ...(c16 ? { service: f(c16.service.perSecond), ratio: `${f((c16.service.perSecond / rawTx.perSecond) * 100, 1)}%` } : {}),
      floor: f(rawTx.perSecond),
    });
    // Two service processes on one database, beside one (they share these cores: no speed-up is
    // expected; what matters is that nothing on the hot path waits on the other instance).
    if (STORE === 'postgres' && svcStore && CFG.concurrency.includes(16)) {
      const child2 = await startChild(svcStore, { VERIFY_RATE_LIMIT_MAX: '1000000000' });
      try {
        const two = await serviceLifecycle([child.url, child2.url]);
        if (CFG.warmupSeconds > 0) await two.run(16, CFG.warmupSeconds);
        const sessions = sessionSampler(serviceAppName(svcStore));
        const win2 = cpuWindow([child.pid, child2.pid]);
        const be2 = await backendCpu(serviceAppName(svcStore));
        const r2 = await two.run(16, CFG.seconds);
        const be2Ms = backendCpuDelta(be2, await backendCpu(serviceAppName(svcStore)));
        r2.cpuPerLifecycle = perLifecycle({ ...win2.stop(), backendsMs: be2Ms }, r2.lifecycles);
        const st = await sessions.stop();
        const one = runs.find((r) => r.service.concurrency === 16)!;
        raw.twoInstances = { run: r2, sessions: st };
        // What this machine allows at most, from CPU measured in these runs, not estimated: every core
        // busy, each lifecycle costing what it cost here (service process(es) + the bench's client +
        // the Postgres backends serving them).
        const cores = cpus().length;
        const perLc = (x: NonNullable<LifecycleRun['cpuPerLifecycle']>) => x.service + x.client + x.backends;
        const bound = (cores * 1000) / Math.min(perLc(one.service.cpuPerLifecycle!), perLc(r2.cpuPerLifecycle!));
        raw.cpuBound = { cores, lifecyclesPerSecondAtMost: bound, floor: one.floor.perSecond };
        const c2 = r2.cpuPerLifecycle!;
        add({
          run: '1 lifecycle',
          measure: `c=16 two processes: CPU ms per lifecycle, services + bench client + their Postgres backends (machine busy ${f(c2.machineCores, 2)} of ${cores} cores)`,
          service: `${f(c2.service, 2)} + ${f(c2.client, 2)} + ${f(c2.backends, 2)}`,
        });
        add({
          run: '1 lifecycle',
          measure: `the most this machine allows: ${cores} cores × 1000 ms / the lowest CPU ms per lifecycle measured above (service + client + backends), against the floor`,
          service: f(bound),
          floor: f(one.floor.perSecond),
          ratio: pctOf(bound, one.floor.perSecond),
        });
        const on = (x: SessionStats) =>
          Object.entries(x.waitingOn)
            .slice(0, 3)
            .map(([k, v]) => `${k} ${f(v * 100, 0)}%`)
            .join(', ') || 'none';
        add({
          run: '1 lifecycle',
          measure: `c=16 over two service processes on one database: lifecycles/s (one process: ${f(one.service.perSecond)}/s); deliver p50 / p99 ${ms(r2.steps.deliver.p50, r2.steps.deliver.p99)}`,
          service: f(r2.perSecond),
          floor: f(one.floor.perSecond),
          ratio: pctOf(r2.perSecond, one.floor.perSecond),
        });
        add({
          run: '1 lifecycle',
          measure: `c=16 two processes: DB sessions waiting on a lock / idle in transaction (avg of ${st.samples} pg_stat_activity samples; waiting on: ${on(st)})`,
          service: `${f(st.lockWaiting, 2)} / ${f(st.idleInTx, 2)}`,
        });
      } finally {
        await child2.stop();
      }
      // One instance with WORKERS=2 (node:cluster, one port) on the same database: the operator's
      // way to give an instance more than one core.
      const clustered = await startChild(svcStore, { VERIFY_RATE_LIMIT_MAX: '1000000000', WORKERS: '2' });
      try {
        const pids = JSON.parse(/"workerPids":(\[[^\]]*\])/.exec(clustered.stderr())?.[1] ?? '[]') as number[];
        const w = await serviceLifecycle(clustered.url);
        if (CFG.warmupSeconds > 0) await w.run(16, CFG.warmupSeconds);
        const win = cpuWindow(pids);
        const be = await backendCpu(serviceAppName(svcStore));
        const rw = await w.run(16, CFG.seconds);
        rw.cpuPerLifecycle = perLifecycle(
          { ...win.stop(), backendsMs: backendCpuDelta(be, await backendCpu(serviceAppName(svcStore))) },
          rw.lifecycles,
        );
        const one = runs.find((r) => r.service.concurrency === 16)!;
        raw.workers2 = { run: rw, workerPids: pids };
        const cw = rw.cpuPerLifecycle;
        add({
          run: '1 lifecycle',
          measure: `c=16 against one instance with WORKERS=2 (one process: ${f(one.service.perSecond)}/s); deliver p50 / p99 ${ms(rw.steps.deliver.p50, rw.steps.deliver.p99)}; CPU ms per lifecycle ${f(cw.service, 2)} + ${f(cw.client, 2)} + ${f(cw.backends, 2)}, machine busy ${f(cw.machineCores, 2)} of ${cpus().length} cores`,
          service: f(rw.perSecond),
          floor: f(one.floor.perSecond),
          ratio: pctOf(rw.perSecond, one.floor.perSecond),
        });
      } finally {
        await clustered.stop();
      }
      // A diagnostic, not a configuration to run: closings answer without waiting for their leaf's
      // integration (LOG_INTEGRATE_WAIT_MS=0). With the event loop saturated at c=16 the wait only
      // moves latency between steps; the sum of the steps' means stays 16 / (lifecycles/s).
      const noWait = await startChild(svcStore, { VERIFY_RATE_LIMIT_MAX: '1000000000', LOG_INTEGRATE_WAIT_MS: '0' });
      try {
        const w = await serviceLifecycle(noWait.url);
        if (CFG.warmupSeconds > 0) await w.run(16, CFG.warmupSeconds);
        const rn = await w.run(16, CFG.seconds);
        const one = runs.find((r) => r.service.concurrency === 16)!;
        raw.noIntegrationWait = rn;
        const means = (r: typeof rn) => r.steps.create.mean + r.steps.fund.mean + r.steps.deliver.mean;
        add({
          run: '1 lifecycle',
          measure: `c=16 diagnostic, closings not waiting for integration (LOG_INTEGRATE_WAIT_MS=0): p99 create / fund / deliver ${f(rn.steps.create.p99, 1)} / ${f(rn.steps.fund.p99, 1)} / ${f(rn.steps.deliver.p99, 1)} ms (waiting: ${f(one.service.steps.create.p99, 1)} / ${f(one.service.steps.fund.p99, 1)} / ${f(one.service.steps.deliver.p99, 1)}); sum of step means ${f(means(rn), 1)} ms (waiting: ${f(means(one.service), 1)}; 16 / lifecycles/s: ${f(16000 / rn.perSecond, 1)})`,
          service: f(rn.perSecond),
          floor: f(one.floor.perSecond),
          ratio: pctOf(rn.perSecond, one.floor.perSecond),
        });
      } finally {
        await noWait.stop();
      }
    }
    await floorStore.close();
    const sampledMax = sampler.stop();
    const { hwmMb, rssMb } = child.rss();
    raw.lifecycle = runs;
    if (svcStore) {
      // How the integrator batched the service's closings over every run above (a head is signed once per batch).
      const [b] = await svcStore.db.query<{ heads: number; size: number }>(
        'SELECT (SELECT count(*) FROM log_heads)::int AS heads, (SELECT size FROM log_state WHERE id = 1)::int AS size',
      );
      raw.integration = { batches: b.heads, leaves: b.size };
      add({
        run: '1 lifecycle',
        measure: `log integration over the service's runs: ${b.size} leaves in ${b.heads} batches`,
        service: `${f(b.size / Math.max(1, b.heads), 2)} leaves per batch`,
      });
    }
    raw.memoryRun1 = { vmHwmMb: hwmMb, vmRssMbAtEnd: rssMb, sampledMaxRssMb: sampledMax, service: CFG.service };
    // Beside the CPU per lifecycle below: what each lifecycle asks of the database.
    const stmts = await statementsPerLifecycle();
    raw.statementsPerLifecycle = stmts;
    add({
      run: '1 lifecycle',
      measure: 'statements per lifecycle (c=1, counted in-process at the driver: BEGIN, COMMIT and the integration batch included)',
      service: f(stmts.service, 1),
      floor: f(stmts.floor, 1),
      ratio: times(stmts.service, stmts.floor),
    });
    for (const { service: s, floor: fl } of runs) {
      const gated = s.concurrency === 16;
      const cs = s.cpuPerLifecycle!,
        cf = fl.cpuPerLifecycle!;
      add({
        run: '1 lifecycle',
        measure: `c=${s.concurrency}: CPU ms per lifecycle: service process + bench client + its Postgres backends (+ the rest of the machine: Postgres' own processes, anything else) (machine busy ${f(cs.machineCores, 2)} of ${cpus().length} cores; floor: ${f(cf.machineCores, 2)})`,
        service: `${f(cs.service, 2)} + ${f(cs.client, 2)} + ${f(cs.backends, 2)} (${signed(cs.database - cs.backends)})`,
        floor: `0 + ${f(cf.client, 2)} + ${f(cf.backends, 2)} (${signed(cf.database - cf.backends)})`,
        ratio: times(cs.service + cs.client + cs.database, cf.client + cf.database),
      });
      add({
        run: '1 lifecycle',
        measure: `c=${s.concurrency}: lifecycles/s (create→fund→deliver; service process CPU ${f(s.serviceCpu!.msPerLifecycle, 1)} ms per lifecycle, ${f(s.serviceCpu!.coreShare * 100, 0)}% of a core)`,
        service: f(s.perSecond),
        floor: f(fl.perSecond),
        ratio: pctOf(s.perSecond, fl.perSecond),
        target: gated ? '≥ 80% of floor' : '',
        result: gated ? pass(s.perSecond >= 0.8 * fl.perSecond) : '',
      });
    }
    if (STORE === 'postgres') {
      for (const { service: s } of runs) {
        const d = s.database!;
        add({
          run: '1 lifecycle',
          measure: `c=${s.concurrency}: commits / WAL flushes / WAL writes per lifecycle (pg_stat_database, pg_stat_wal; whole database, less its idle rate over the same window; the floor's are 3 commits by construction)`,
          service: `${f(d.commits, 2)} / ${f(d.walSyncs, 2)} / ${f(d.walWrites, 2)}`,
          target: s.concurrency === 16 ? 'commits ≤ 1' : '',
          result: s.concurrency === 16 ? pass(d.commits <= 1) : '',
        });
      }
      for (const { service: s, sessions } of runs) {
        const on = (x: SessionStats) =>
          Object.entries(x.waitingOn)
            .slice(0, 2)
            .map(([k, v]) => `${k} ${f(v * 100, 0)}%`)
            .join(', ') || 'none';
        add({
          run: '1 lifecycle',
          measure: `c=${s.concurrency}: DB sessions waiting on a lock / idle in transaction (avg; service waits on: ${on(sessions.service)})`,
          service: `${f(sessions.service.lockWaiting, 2)} / ${f(sessions.service.idleInTx, 2)}`,
          floor: `${f(sessions.floor.lockWaiting, 2)} / ${f(sessions.floor.idleInTx, 2)}`,
        });
      }
    }
    for (const { service: s, floor: fl } of runs) {
      for (const step of STEPS) {
        const gated = s.concurrency === 16;
        add({
          run: '1 lifecycle',
          measure: `c=${s.concurrency}: ${step} p50 / p99`,
          service: ms(s.steps[step].p50, s.steps[step].p99),
          floor: ms(fl.steps[step].p50, fl.steps[step].p99),
          ratio: `${times(s.steps[step].p99, fl.steps[step].p99)} (p99)`,
          target: gated ? 'p99 < 50 ms' : '',
          result: gated ? pass(s.steps[step].p99 < 50) : '',
        });
      }
    }
    add({
      run: '6 memory',
      measure: `service peak RSS during run 1 (VmHWM, ${CFG.service === 'bundle' ? 'bundle' : 'node --import tsx'})`,
      service: `${f(hwmMb)} MB`,
      floor: '',
      ratio: '',
      target: '< 300 MB',
      result: pass(hwmMb < 300),
    });
  }
  if (wantVerify) {
    let proof = service.lastProof();
    if (!proof) {
      await service.run(1, 0.01);
      proof = service.lastProof();
    }
    log(`verify: POST /v1/verify for ${CFG.verifySeconds} s, ${CFG.verifyConnections} connections`);
    const v = await verifyService(child.url, proof, CFG.verifyConnections, CFG.verifySeconds, CFG.warmupSeconds);
    const fl = verifyFloor(proof, CFG.cryptoSeconds);
    raw.verify = { service: v, floor: fl };
    if (v.non2xx > 0) log(`verify: ${v.non2xx} answers were not 2xx`);
    add({
      run: '2 verify',
      measure: `POST /v1/verify req/s (${v.tool}, ${v.connections} conns; p50 ${f(v.p50Ms, 2)} ms, p99 ${f(v.p99Ms, 2)} ms${v.non2xx ? `; ${v.non2xx} non-2xx` : ''}) vs raw Ed25519 verify/s`,
      service: f(v.perSecond),
      floor: f(fl.perSecond),
      ratio: pctOf(v.perSecond, fl.perSecond),
    });
    const cc = cryptoCompare(proof, CFG.cryptoSeconds);
    raw.crypto = cc;
    add({
      run: '2 verify',
      measure: "Ed25519 sign/s: the service's library (noble, src/crypto/ed25519.ts) vs node:crypto (OpenSSL), same key and message",
      service: f(cc.nobleSignPerSecond, 0),
      floor: f(cc.nodeSignPerSecond, 0),
      ratio: pctOf(cc.nobleSignPerSecond, cc.nodeSignPerSecond),
    });
    add({
      run: '2 verify',
      measure: "Ed25519 verify/s: noble (strict, the service's policy) vs node:crypto (OpenSSL)",
      service: f(cc.nobleVerifyPerSecond, 0),
      floor: f(cc.nodeVerifyPerSecond, 0),
      ratio: pctOf(cc.nobleVerifyPerSecond, cc.nodeVerifyPerSecond),
    });
  }
}

async function logRun(): Promise<void> {
  const store = await newStore('log');
  const runs = await logBench(store, CFG.logSizes, CFG.logSamples);
  await store.close();
  raw.log = runs;
  const kinds = [
    ['root', "root (head's rootAt)"],
    ['inclusion', 'inclusion (inclusionAt)'],
    ['consistency', 'consistency (consistencyBetween)'],
    ['httpHeadUncached', 'GET /v1/log/head, uncached (root+sign+store)'],
    ['httpTile', 'GET /v1/log/tile/0/<N> (a full tile)'],
  ] as const;
  for (const r of runs) {
    for (const [k, label] of kinds) {
      add({
        run: '3 log',
        measure: `${sizeLabel(r.size)} leaves: ${label} p50 / p99`,
        service: ms(r[k].p50, r[k].p99),
        floor: ms(r.pointRead.p50, r.pointRead.p99),
        ratio: times(r[k].p50, r.pointRead.p50),
      });
    }
  }
  if (runs.length >= 2) {
    const small = runs[0];
    const big = runs[runs.length - 1];
    for (const [k, label] of kinds) {
      const ratio = big[k].p50 / small[k].p50;
      add({
        run: '3 log',
        measure: `${label}: p50 at ${sizeLabel(big.size)} / at ${sizeLabel(small.size)}`,
        service: `${f(big[k].p50, 2)} / ${f(small[k].p50, 2)} ms`,
        floor: `${f(big.pointRead.p50, 2)} / ${f(small.pointRead.p50, 2)} ms`,
        ratio: `${f(ratio, 2)}x`,
        target: 'within 3x',
        result: pass(ratio <= 3),
      });
    }
  }
}

async function sweepRun(): Promise<void> {
  const n = CFG.sweepEscrows;
  log(`sweep: ${n} expired escrows, service`);
  let store = await newStore('sweep');
  // Alone (against its floor), then again with a user's deliveries running meanwhile (their latency).
  const alone = await sweepService(store, n, 0, false);
  await store.close();
  log(`sweep: service alone ${f(alone.ms / 1000, 2)} s; with a user's deliveries`);
  store = await newStore('sweepuser');
  const s = await sweepService(store, n, CFG.sweepIdleProbes);
  await store.close();
  log(`sweep: service ${f(s.ms / 1000, 2)} s; floor`);
  store = await newStore('sweepfloor');
  const fl = await sweepFloor(store, n);
  await store.close();
  // Two passes side by side in one process (each its own transaction, SKIP LOCKED), service and
  // floor: where one pass's waits are what bounds the rate, a second one uses them.
  log(`sweep: floor ${f(fl.ms / 1000, 2)} s; service with 2 passes side by side`);
  store = await newStore('sweeppar');
  const alone2 = await sweepService(store, n, 0, false, 2);
  await store.close();
  log(`sweep: service, 2 passes ${f(alone2.ms / 1000, 2)} s; floor, 2 passes`);
  store = await newStore('sweepfloorpar');
  const fl2 = await sweepFloor(store, n, 2);
  await store.close();
  log(`sweep: floor, 2 passes ${f(fl2.ms / 1000, 2)} s; two instances`);
  store = await newStore('sweep2');
  const two = await sweepTwoInstances(store, n);
  await store.close();
  raw.sweep = { serviceAlone: alone, service: s, floor: fl, serviceTwoPasses: alone2, floorTwoPasses: fl2, twoInstances: two };
  const cpu = (r: SweepRun) => `${f(r.cpuPerClose.process, 2)} + ${f(r.cpuPerClose.backends, 2)}`;
  add({
    run: '4 sweep',
    measure: `close ${sizeLabel(n)} expired escrows, 1 instance, nothing else running: s (escrows/s)`,
    service: `${f(alone.ms / 1000, 2)} s (${f(alone.perSecond, 0)}/s)`,
    floor: `${f(fl.ms / 1000, 2)} s (${f(fl.perSecond, 0)}/s)`,
    ratio: pctOf(alone.perSecond, fl.perSecond),
    target: 'closings/s ≥ 80% of floor',
    result: pass(alone.perSecond >= 0.8 * fl.perSecond),
  });
  add({
    run: '4 sweep',
    measure: "that sweep: CPU ms per closing, this process (the in-process service, or the floor's client) + its Postgres backends",
    service: cpu(alone),
    floor: cpu(fl),
    ratio: times(alone.cpuPerClose.total, fl.cpuPerClose.total),
  });
  add({
    run: '4 sweep',
    measure: `the same with 2 passes side by side, service and floor (CPU ms per closing ${cpu(alone2)} vs ${cpu(fl2)}; machine bound at that CPU: ${f((cpus().length * 1000) / alone2.cpuPerClose.total, 0)} vs ${f((cpus().length * 1000) / fl2.cpuPerClose.total, 0)}/s)`,
    service: `${f(alone2.ms / 1000, 2)} s (${f(alone2.perSecond, 0)}/s)`,
    floor: `${f(fl2.ms / 1000, 2)} s (${f(fl2.perSecond, 0)}/s)`,
    ratio: pctOf(alone2.perSecond, fl2.perSecond),
  });
  add({
    run: '4 sweep',
    measure: `the same sweep while a user's deliveries run in the same process: s (escrows/s)`,
    service: `${f(s.ms / 1000, 2)} s (${f(s.perSecond, 0)}/s)`,
    floor: `${f(fl.ms / 1000, 2)} s (${f(fl.perSecond, 0)}/s)`,
    ratio: pctOf(s.perSecond, fl.perSecond),
  });
  add({
    run: '4 sweep',
    measure: `a user's deliver p50 / p99 while that sweep runs (${s.deliverDuringSweep.n} probes; idle: ${ms(s.deliverIdle.p50, s.deliverIdle.p99)})`,
    service: ms(s.deliverDuringSweep.p50, s.deliverDuringSweep.p99),
    floor: '',
    ratio: '',
    target: 'p99 < 50 ms',
    result: pass(s.deliverDuringSweep.p99 < 50),
  });
  add({
    run: '4 sweep',
    measure: `same, 2 instances together (closed ${two.byInstance.join(' + ')}; proofs ${two.proofs}, distinct ${two.distinctEscrows}, log ${two.logSize})`,
    service: `${f(two.ms / 1000, 2)} s (${f(two.perSecond, 0)}/s)`,
    floor: `${f(fl.ms / 1000, 2)} s`,
    ratio: times(two.ms, fl.ms),
    target: 'exactly once: proofs == escrows',
    result: pass(two.exactlyOnce),
  });
}

async function webhookRun(child: Child): Promise<void> {
  log(`webhooks: ${CFG.webhookConcurrency} concurrent escrows for ${CFG.webhookSeconds} s`);
  const w = await webhookBench(child, CFG.webhookSeconds, CFG.webhookConcurrency, CFG.webhookDrainSeconds);
  raw.webhooks = w;
  add({
    run: '5 webhooks',
    measure: `${w.concurrency} concurrent escrows, 1 receiver: delivered events/s (produced ${f(w.producedPerSecond, 0)}/s; ${w.delivered}/${w.produced} delivered, ${w.duplicates} dup) vs raw POST/s with ${w.floor.inFlight} in flight`,
    service: f(w.deliveredPerSecond),
    floor: f(w.floor.perSecond),
    ratio: pctOf(w.deliveredPerSecond, w.floor.perSecond),
  });
  add({
    run: '5 webhooks',
    measure: `end to end, commit (answer returned) → receipt p50 / p99 (from event at: p99 ${f(w.e2eFromAt.p99, 0)} ms; backlog drained at ${f(w.drainPerSecond, 0)}/s, gap between receipts p50 ${f(w.gap.p50, 2)} ms, service CPU ${f(w.drainCpu.msPerEvent, 1)} ms/event = ${f(w.drainCpu.coreShare * 100, 0)}% of a core)`,
    service: ms(w.e2e.p50, w.e2e.p99),
    floor: '',
    ratio: '',
    target: 'p99 < 1 s',
    result: pass(w.e2e.p99 < 1000),
  });
  add({
    run: '5 webhooks',
    measure: 'a held backlog drains at events/s',
    service: f(w.drainPerSecond, 0),
    target: '≥ 500/s',
    result: pass(w.drainPerSecond >= 500),
  });
}

/** The open sandbox as a developer starts it (embedded PGlite in memory), idle: its RSS after start. */
async function sandboxIdleRss(): Promise<void> {
  const child = await startChild({ pgliteMemory: true });
  try {
    await sleep(3000);
    const r = child.rss();
    raw.sandboxIdle = r;
    add({
      run: '6 memory',
      measure: 'PGlite sandbox idle RSS (DATA_DIR=:memory:, 3 s after listening; VmRSS / VmHWM)',
      service: `${f(r.rssMb)} / ${f(r.hwmMb)} MB`,
      target: '< 300 MB',
      result: pass(r.rssMb < 300),
    });
  } finally {
    await child.stop();
  }
}

async function memoryRun(): Promise<void> {
  await sandboxIdleRss();
  const m = await memoryAfter(CFG.memoryEscrows);
  raw.memoryAfter = m;
  add({
    run: '6 memory',
    measure: `RSS with ${sizeLabel(m.escrows)} escrows, fresh process after paged lists, 100 reads, head, 20 lifecycles (VmRSS / VmHWM)`,
    service: `${f(m.afterRoutes.rssMb)} / ${f(m.afterRoutes.hwmMb)} MB`,
    target: '< 300 MB',
    result: pass(m.afterRoutes.hwmMb < 300),
  });
  add({
    run: '6 memory',
    measure: `then GET /v1/escrows unpaginated (${sizeLabel(m.escrows)} rows, ${f(m.unpaginated.bytes / 1e6)} MB body, ${f(m.unpaginated.ms, 0)} ms) VmRSS / VmHWM`,
    service: `${f(m.unpaginated.rssMb)} / ${f(m.unpaginated.hwmMb)} MB`,
    target: '< 300 MB',
    result: pass(m.unpaginated.hwmMb < 300),
  });
}

function table(): string {
  const head: Row = {
    run: 'Run',
    measure: 'Measure',
    service: 'Service',
    floor: 'Floor',
    ratio: 'Service/Floor',
    target: 'Target',
    result: 'Result' as Row['result'],
  };
  const cols = Object.keys(head) as Array<keyof Row>;
  const all = [head, ...rows];
  const width = (k: keyof Row) => Math.max(...all.map((r) => String(r[k]).length));
  const line = (r: Row) => `| ${cols.map((k) => String(r[k]).padEnd(width(k))).join(' | ')} |`;
  return [line(head), `|${cols.map((k) => '-'.repeat(width(k) + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

async function postgresVersion(): Promise<string> {
  const db = openPostgres(CFG.databaseUrl!, { max: 1 });
  try {
    const [{ v }] = await db.query<{ v: string }>('SELECT version() AS v');
    return v;
  } finally {
    await db.close();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const load0 = loadavg();
  log(`store: ${STORE_LABEL}${CFG.quick ? ' (BENCH_QUICK)' : ''}; ${MODE_LABEL}; runs: ${CFG.only.join(', ')}`);
  if (CFG.only.some((r) => r === 'lifecycle' || r === 'verify' || r === 'webhooks')) {
    // The service process and the floor's store start together (each takes seconds on PGlite).
    const [{ child, store }, floorStore] = await Promise.all([
      serviceProcess(),
      CFG.only.includes('lifecycle') ? newStore('lifefloor') : Promise.resolve(null),
    ]);
    await lifecycleAndVerify(child, store, floorStore);
    if (CFG.only.includes('webhooks')) await webhookRun(child);
    await child.stop();
    await store?.close();
  }
  if (CFG.only.includes('log')) await logRun();
  if (CFG.only.includes('sweep')) await sweepRun();
  if (CFG.only.includes('memory')) await memoryRun();
  // Rows in run order (memory run 1 was measured during run 1, printed with run 6).
  rows.sort((a, b) => a.run.localeCompare(b.run));
  const meta = {
    at: new Date(started).toISOString(),
    store: STORE,
    storeLabel: STORE_LABEL,
    database: CFG.databaseUrl ? CFG.databaseUrl.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@') : null,
    quick: CFG.quick,
    groupCommit: CFG.groupCommit,
    httpBody: CFG.httpBody,
    service: CFG.service,
    node: process.version,
    cpus: `${cpus().length} × ${cpus()[0]?.model ?? '?'}`,
    memoryGb: round(totalmem() / 2 ** 30, 1),
    loadavgAtStart: load0.map((n) => round(n, 2)),
    loadavgAtEnd: loadavg().map((n) => round(n, 2)),
    postgres: STORE === 'postgres' ? await postgresVersion() : null,
    // What the person running the bench knows about the machine that the load average does not say.
    note: process.env.BENCH_NOTE ?? null,
    seconds: (Date.now() - started) / 1000,
    config: { ...CFG, databaseUrl: undefined, out: relative(ROOT, CFG.out) },
  };
  const text = table();
  const header = `escrow-settlement bench: ${STORE_LABEL}${CFG.quick ? ', BENCH_QUICK' : ''}; ${MODE_LABEL}; node ${process.version}, ${meta.cpus}; load ${load0.map((n) => n.toFixed(2)).join(' ')}; ${f(meta.seconds, 0)} s`;
  process.stdout.write(`${header}\n\n${text}\n`);
  const targets = rows
    .filter((r) => r.result)
    .map((r) => ({ run: r.run, measure: r.measure, target: r.target, value: r.ratio || r.service, result: r.result }));
  writeFileSync(CFG.out, JSON.stringify({ meta, header, table: rows, targets, raw }, null, 2) + '\n');
  log(`wrote ${CFG.out}`);
}

let exiting = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (exiting) return;
    exiting = true;
    log(`${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err) => {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? err}\n`);
    await cleanup();
    process.exit(1);
  });
