// Shared pieces of `npm run bench` (bench/run.ts): configuration, stores and throwaway schemas, the
// service as a child process (with its RSS read from /proc), a keep-alive HTTP client, statistics.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { parseConfig, type Config } from '../src/config.ts';
import { createApp, type App } from '../src/app.ts';
import { openPostgres, socketUrl } from '../src/db/postgres.ts';
import { PG_DRIVER_DEFAULTS, pgDriverOptions } from '../src/db/pgOptions.ts';
import { httpBodyMode } from '../src/node/adapter.ts';
import { openPglite } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import type { Db, Queryable, Row, Stmt, Tx } from '../src/db/types.ts';
import { ensureKeys, type StartKeys } from '../src/proof/keyEras.ts';
import { generateKeyFiles, nodeKeySources } from '../src/node/serviceKeys.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Configuration (environment, read once)

const env = process.env;
const quick = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';

function num(name: string, full: number, fast: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return quick ? fast : full;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
  return n;
}

function list(name: string, full: number[], fast: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return quick ? fast : full;
  const out = raw.split(',').map((s) => Number(s.trim()));
  if (out.some((n) => !Number.isSafeInteger(n) || n < 1))
    throw new Error(`${name} must be a comma list of positive integers, got ${JSON.stringify(raw)}`);
  return out;
}

export const SECTIONS = ['lifecycle', 'verify', 'log', 'sweep', 'webhooks', 'memory'] as const;
export type Section = (typeof SECTIONS)[number];

export const CFG = {
  quick,
  databaseUrl: env.BENCH_DATABASE_URL || undefined,
  /** Seconds each lifecycle measurement runs (per concurrency level, per side). */
  seconds: num('BENCH_SECONDS', 6, 0.5),
  warmupSeconds: num('BENCH_WARMUP_SECONDS', 1, 0),
  concurrency: list('BENCH_CONCURRENCY', [1, 16, 64], [1, 16]),
  verifySeconds: num('BENCH_VERIFY_SECONDS', 5, 1),
  verifyConnections: num('BENCH_VERIFY_CONNECTIONS', 16, 8),
  /** Seconds per Ed25519 measurement (noble and node:crypto, sign and verify). */
  cryptoSeconds: num('BENCH_CRYPTO_SECONDS', 1.5, 0.2),
  logSizes: list('BENCH_LOG_SIZES', [1_000, 100_000, 1_000_000], [1_000, 4_000]),
  logSamples: num('BENCH_LOG_SAMPLES', 300, 15),
  sweepEscrows: num('BENCH_SWEEP_ESCROWS', 10_000, 100),
  /** Deliveries timed with nothing else running, before the sweep (the idle reference). */
  sweepIdleProbes: num('BENCH_SWEEP_IDLE_PROBES', 30, 5),
  webhookSeconds: num('BENCH_WEBHOOK_SECONDS', 5, 0.5),
  webhookConcurrency: num('BENCH_WEBHOOK_CONCURRENCY', 16, 16),
  webhookDrainSeconds: num('BENCH_WEBHOOK_DRAIN_SECONDS', 120, 30),
  memoryEscrows: num('BENCH_MEMORY_ESCROWS', 100_000, 500),
  /** tsx (node --import tsx src/main.ts, the default) or bundle (dist/escrow-settlement.mjs; run `npm run build` first). */
  service: (env.BENCH_SERVICE === 'bundle' ? 'bundle' : 'tsx') as 'tsx' | 'bundle',
  /** Extra node flags for the service process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (split on spaces). */
  nodeArgs: (env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
  only: env.BENCH_ONLY ? (env.BENCH_ONLY.split(',').map((s) => s.trim()) as Section[]) : [...SECTIONS],
  out: env.BENCH_OUT || join(ROOT, 'bench', 'results.json'),
  /**
   * GROUP_COMMIT of the service under test (src/db/groupCommit.ts), on or off (default on): handed
   * to every service child and to the in-process services' pools, and printed with the results.
   */
  groupCommit: pgDriverOptions({ GROUP_COMMIT: env.GROUP_COMMIT }).groupCommit,
  /** HTTP_BODY of the service children (src/node/adapter.ts): stream (default) or direct; printed with the results. */
  httpBody: httpBodyMode({ HTTP_BODY: env.HTTP_BODY }),
};

/** The driver settings of the service's own pools (in-process runs): the defaults with this run's GROUP_COMMIT. */
const SERVICE_DRIVER = { ...PG_DRIVER_DEFAULTS, groupCommit: CFG.groupCommit };

export const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ---------------------------------------------------------------------------------------------
// Statistics

export function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export interface Dist {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

export function dist(values: number[]): Dist {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, p50: pct(s, 50), p99: pct(s, 99), max: s[s.length - 1] ?? NaN, mean };
}

export const round = (n: number, digits = 2) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : n);
export const nowMs = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Stores: real Postgres in throwaway schemas (dropped at the end), or PGlite in memory.

export type StoreKind = 'postgres' | 'pglite';
export const STORE: StoreKind = CFG.databaseUrl ? 'postgres' : 'pglite';

/** How the output names the modes that ran. */
export const MODE_LABEL = `GROUP_COMMIT ${CFG.groupCommit ? 'on' : 'off'}${STORE === 'pglite' ? ' (no effect on PGlite)' : ''}, HTTP_BODY ${CFG.httpBody}`;

/** One of the bench's own postgres.js clients (admin, sampler): it reaches the server as the service does, Unix sockets included. */
function rawSql(opts: postgres.Options<Record<string, never>> = {}): postgres.Sql {
  const { url, host } = socketUrl(CFG.databaseUrl!);
  return postgres(url, { ...(host ? { host } : {}), max: 1, onnotice: () => {}, ...opts });
}

const RUN_ID = `bench_${process.pid}_${Date.now().toString(36)}`;
const schemas: string[] = [];
const closers: Array<() => Promise<unknown>> = [];
const children = new Set<ChildProcess>();
const tmpDirs: string[] = [];

/** A store the bench owns: a fresh migrated schema (Postgres) or a fresh in-memory PGlite. */
export interface Store {
  kind: StoreKind;
  /** Postgres schema name, or a label for PGlite. */
  name: string;
  /** The service's Db (src/db/postgres.ts or src/db/pglite.ts), migrated and with keys. */
  db: Db;
  /** postgres:// URL with search_path set to the schema, for a child service (Postgres only). */
  url?: string;
  /** Closes the bench's pool (or the PGlite instance) now; clean-up would otherwise do it at the end. */
  close(): Promise<unknown>;
}

/** Runs `fn` once, however often it is called (closing a pool early and again at clean-up). */
function once(fn: () => Promise<unknown>): () => Promise<unknown> {
  let p: Promise<unknown> | undefined;
  return () => (p ??= fn().catch(() => {}));
}

/**
 * The run's service keys (docs/keys.md): two files written once, held by the bench for the stores it
 * fills and named to every service it starts, so each store's first eras are the keys its service signs with.
 */
let keysOnce: Promise<{ keys: StartKeys; env: Record<string, string> }> | undefined;
export function benchKeys(): Promise<{ keys: StartKeys; env: Record<string, string> }> {
  keysOnce ??= (async () => {
    const files = generateKeyFiles(tempDir('keys'), parseConfig({}).logOrigin);
    const sources = nodeKeySources({ logOrigin: parseConfig({}).logOrigin });
    const issuer = await sources.load(`file:${files.issuer}`, 'ISSUER_KEY');
    const webhook = await sources.load(`file:${files.webhook}`, 'WEBHOOK_KEY');
    return { keys: { issuer, webhook }, env: { ISSUER_KEY: `file:${files.issuer}`, WEBHOOK_KEY: `file:${files.webhook}` } };
  })();
  return keysOnce;
}

/**
 * PGlite: one in-process instance for the whole run (starting one costs seconds), each store a schema
 * of its own made current with SET search_path. Stores are used one after another, never together.
 */
let sharedPglite: Promise<Db> | undefined;

export async function newStore(name: string, opts: { max?: number } = {}): Promise<Store> {
  if (STORE === 'pglite') {
    if (!sharedPglite) {
      sharedPglite = openPglite(':memory:');
      const p = sharedPglite;
      closers.push(once(async () => (await p).close()));
    }
    const db = await sharedPglite;
    const schema = `s_${name}`;
    await db.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
    await migrate(db);
    await ensureKeys(db, (await benchKeys()).keys);
    return { kind: 'pglite', name: `pglite:${name}`, db, close: once(() => db.exec(`DROP SCHEMA ${schema} CASCADE`)) };
  }
  const schema = `${RUN_ID}_${name}`;
  const admin = rawSql();
  await admin.unsafe(`CREATE SCHEMA ${schema}`);
  await admin.end();
  schemas.push(schema);
  const db = openPostgres(CFG.databaseUrl!, {
    schema,
    max: opts.max ?? 10,
    applicationName: inProcessAppName(schema),
    driver: SERVICE_DRIVER,
  });
  const close = once(() => db.close());
  closers.push(close);
  await migrate(db);
  await ensureKeys(db, (await benchKeys()).keys);
  return { kind: 'postgres', name: schema, db, url: withSearchPath(CFG.databaseUrl!, schema, `${RUN_ID}_svc_${name}`), close };
}

/** application_name of the store's own pool, which in-process apps (sweep bench) use. */
const inProcessAppName = (schema: string) => `${schema}_db`.replace(/^bench_/, 'bd_').slice(0, 63);
export const storeAppName = (store: Store) => (store.kind === 'postgres' ? inProcessAppName(store.name) : '');

/** application_name of the floor's connections on a store (pg_stat_activity tells them apart). */
export const floorAppName = (store: Store) => `${store.name}_floor`.replace(/^bench_/, 'bf_').slice(0, 63);
export const serviceAppName = (store: Store | null) => (store?.url ? new URL(store.url).searchParams.get('application_name')! : '');

/** Another pool on the same schema (a second service instance). */
export function samePool(store: Store, max = 10): Db {
  if (store.kind === 'pglite') return store.db;
  const db = openPostgres(CFG.databaseUrl!, { schema: store.name, max, driver: SERVICE_DRIVER });
  closers.push(() => db.close());
  return db;
}

function withSearchPath(url: string, schema: string, appName: string): string {
  const u = new URL(url);
  // postgres.js passes unknown URL parameters as connection parameters (after its own defaults, so
  // they win): search_path reaches the server, and application_name names the child's sessions.
  u.searchParams.set('search_path', schema);
  u.searchParams.set('application_name', appName.slice(0, 63));
  return u.toString();
}

/**
 * The floor's connection: postgres.js itself (no service code in between) on the store's schema,
 * with the same pool size and the same statement handling as src/db/postgres.ts (prepared
 * statements; statements given together inside a transaction are pipelined, one round trip). On
 * PGlite it is the store's own connection (there is no other).
 */
export function rawDb(store: Store, max = 10): Db {
  if (store.kind === 'pglite') return store.db;
  const db = openPostgres(CFG.databaseUrl!, { max, schema: store.name, applicationName: floorAppName(store) });
  closers.push(() => db.close());
  return db;
}

/**
 * The Db, telling `onStatement` of every statement it is given: each query, each statement of a
 * batch or of commitWith, and the BEGIN and COMMIT of a transaction and the SAVEPOINT and RELEASE of
 * a savepoint as PGlite sends them (on Postgres BEGIN and COMMIT travel with the first and last
 * statements instead, and the driver's own debug hook counts them).
 */
export function tapStatements(db: Db, onStatement: (s: Stmt) => void): Db {
  const q = (x: Queryable): Queryable => ({
    query: <T extends Row>(text: string, params?: unknown[]) => {
      onStatement({ text, params });
      return x.query<T>(text, params);
    },
    batch: (stmts: Stmt[]) => {
      for (const s of stmts) onStatement(s);
      return x.batch(stmts);
    },
  });
  const t = (x: Tx): Tx => ({
    ...q(x),
    afterCommit: (fn) => x.afterCommit(fn),
    sent: () => x.sent(),
    commitWith: (stmts: Stmt[]) => {
      for (const s of stmts) onStatement(s);
      return x.commitWith(stmts);
    },
    savepoint: (fn) => {
      onStatement({ text: 'SAVEPOINT' });
      onStatement({ text: 'RELEASE SAVEPOINT' });
      return x.savepoint((inner) => fn(t(inner)));
    },
  });
  return {
    ...q(db),
    kind: db.kind,
    exec: (text) => db.exec(text),
    close: () => db.close(),
    tx: (fn) => {
      onStatement({ text: 'BEGIN' });
      onStatement({ text: 'COMMIT' });
      return db.tx((x) => fn(t(x)));
    },
  };
}

export function benchConfig(extra: Record<string, string> = {}): Config {
  return parseConfig({ DATA_DIR: ':memory:', PUBLIC_RATE_LIMIT_MAX: '1000000000', VERIFY_RATE_LIMIT_MAX: '1000000000', ...extra });
}

export function inProcessApp(db: Db, extra: Record<string, string> = {}): App {
  return createApp({ db, config: benchConfig(extra) });
}

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), `escrow-bench-${prefix}-`));
  tmpDirs.push(d);
  return d;
}

/** Closes every pool, stops every child, drops every schema this run made. Safe to call twice. */
export async function cleanup(): Promise<void> {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  if (STORE === 'postgres' && schemas.length) {
    const admin = rawSql();
    for (const s of schemas.splice(0))
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch((e) => log(`could not drop schema ${s}: ${e}`));
    await admin.end();
  }
  for (const d of tmpDirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------
// What the database sessions of one side are doing (Postgres only): sampled from pg_stat_activity.

export interface SessionStats {
  samples: number;
  /** Average sessions waiting on a heavyweight lock (row locks: transactionid / tuple). */
  lockWaiting: number;
  /** Average sessions idle in transaction: a transaction open while its client (the app) is busy. */
  idleInTx: number;
  /** Average sessions running a statement. */
  active: number;
  /** What the lock waiters were running (first words of the statement) → share of waiter samples. */
  waitingOn: Record<string, number>;
}

export function sessionSampler(appName: string, everyMs = 20): { stop(): Promise<SessionStats> } {
  const empty: SessionStats = { samples: 0, lockWaiting: NaN, idleInTx: NaN, active: NaN, waitingOn: {} };
  if (STORE !== 'postgres' || !appName) return { stop: async () => empty };
  const sql = rawSql({ connection: { application_name: 'bench-sampler' } });
  let stopped = false;
  const acc = { samples: 0, lock: 0, idle: 0, active: 0, on: new Map<string, number>() };
  const loop = (async () => {
    while (!stopped) {
      const rows = await sql<{ state: string | null; wait_event_type: string | null; q: string }[]>`
        SELECT state, wait_event_type, regexp_replace(left(query, 60), '\\s+', ' ', 'g') AS q
          FROM pg_stat_activity WHERE application_name = ${appName}`;
      acc.samples++;
      for (const r of rows) {
        if (r.wait_event_type === 'Lock') {
          acc.lock++;
          const key = r.q
            .replace(/^(WITH \w+ AS \()?/, '')
            .split(' ')
            .slice(0, 3)
            .join(' ');
          acc.on.set(key, (acc.on.get(key) ?? 0) + 1);
        }
        if (r.state === 'idle in transaction') acc.idle++;
        if (r.state === 'active') acc.active++;
      }
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop.catch(() => {});
      await sql.end({ timeout: 1 });
      const n = acc.samples || 1;
      const waitingOn: Record<string, number> = {};
      for (const [k, v] of [...acc.on].sort((a, b) => b[1] - a[1]).slice(0, 4))
        waitingOn[k] = Math.round((v / (acc.lock || 1)) * 100) / 100;
      return { samples: acc.samples, lockWaiting: acc.lock / n, idleInTx: acc.idle / n, active: acc.active / n, waitingOn };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The service as a child process: what operators run, measured from outside.

export interface Child {
  url: string;
  pid: number;
  /** Current and peak resident set size of the service process (kB → MB), from /proc/<pid>/status. */
  rss(): { rssMb: number; hwmMb: number };
  /** CPU time the service process has used so far (user + system), ms, from /proc/<pid>/stat. */
  cpuMs(): number;
  stderr(): string;
  stop(): Promise<void>;
}

/** Busy CPU of the whole machine so far, ms over all cores (/proc/stat: everything but idle and iowait). */
export function machineBusyMs(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] || 0)) * 10;
}

/** Where the machine's CPU went over a window: the service process(es), this bench process, the rest (the database). */
export interface CpuSplit {
  serviceMs: number;
  benchMs: number;
  restMs: number;
  machineMs: number;
  elapsedMs: number;
  backendsMs?: number;
}

export function cpuWindow(servicePids: number[]): { stop(): CpuSplit } {
  const svc = () => servicePids.reduce((a, p) => a + procCpuMs(p), 0);
  const me = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const t0 = performance.now(),
    m0 = machineBusyMs(),
    s0 = svc(),
    b0 = me();
  return {
    stop() {
      const machineMs = machineBusyMs() - m0,
        serviceMs = servicePids.length ? svc() - s0 : 0,
        benchMs = me() - b0;
      return { serviceMs, benchMs, restMs: Math.max(0, machineMs - serviceMs - benchMs), machineMs, elapsedMs: performance.now() - t0 };
    },
  };
}

/**
 * CPU used so far by the Postgres backends serving one application_name (from pg_stat_activity and
 * /proc): the database's share of a run, counted precisely even when other work shares the machine.
 */
export async function backendCpu(appName: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (STORE !== 'postgres' || !appName) return out;
  const sql = rawSql();
  try {
    const rows = await sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE application_name = ${appName}`;
    for (const { pid } of rows) {
      try {
        out.set(pid, procCpuMs(pid));
      } catch {
        // gone already
      }
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
  return out;
}

/**
 * The database's commits (pg_stat_database.xact_commit, read-only transactions included) and WAL
 * flushes and writes (pg_stat_wal.wal_sync / wal_write, every process's) so far; on PGlite zeros.
 * Two snapshots around a run give what it asked of the database per lifecycle. The figures are the
 * whole database's: the bench's own samplers' short reads are in them (a few per second). A backend
 * reports its counts at most once a second while busy and within 10 s of going idle (Postgres 15's
 * PGSTAT_IDLE_INTERVAL), so each snapshot first waits that out: `settle` (ms).
 */
export async function dbCounters(settle = 10_500): Promise<{ commits: number; walSyncs: number; walWrites: number }> {
  if (STORE !== 'postgres') return { commits: 0, walSyncs: 0, walWrites: 0 };
  await sleep(settle);
  const sql = rawSql();
  try {
    const [row] = await sql<{ commits: string; syncs: string; writes: string }[]>`
      SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits,
             (SELECT wal_sync FROM pg_stat_wal)::text AS syncs, (SELECT wal_write FROM pg_stat_wal)::text AS writes`;
    return { commits: Number(row.commits), walSyncs: Number(row.syncs), walWrites: Number(row.writes) };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** CPU the backends used between two backendCpu snapshots (a backend that appeared counts from 0). */
export const backendCpuDelta = (a: Map<number, number>, b: Map<number, number>) =>
  [...b].reduce((t, [pid, ms]) => t + ms - (a.get(pid) ?? 0), 0);

/** utime + stime of a process in ms (fields 14 and 15 of /proc/<pid>/stat; clock ticks of 10 ms). */
function procCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function procStatusMb(pid: number): { rssMb: number; hwmMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

/**
 * Starts the service (`node --import tsx src/main.ts`, or the bundle with BENCH_SERVICE=bundle) on
 * 127.0.0.1, port 0, against the store: Postgres through DATABASE_URL with the schema's search_path;
 * PGlite through DATA_DIR (':memory:', or a directory the bench filled while no one else had it).
 */
/** Where a child service keeps its data: a Postgres store (schema), a PGlite directory, or PGlite in its own memory. */
export type ChildTarget = Store | { pgliteDir: string } | { pgliteMemory: true };

/**
 * A store for a child service only: on Postgres a fresh schema (the bench also reads it); on PGlite
 * the child's own in-memory database (one owner: nothing else can open it).
 */
export async function childTarget(name: string): Promise<{ target: ChildTarget; store: Store | null }> {
  if (STORE === 'pglite') return { target: { pgliteMemory: true }, store: null };
  const store = await newStore(name);
  return { target: store, store };
}

export async function startChild(store: ChildTarget, extraEnv: Record<string, string> = {}): Promise<Child> {
  const dir = tempDir('svc');
  const storeEnv: Record<string, string> =
    'pgliteDir' in store
      ? { DATA_DIR: store.pgliteDir, REQUEST_LOG: join(dir, 'requests.log') }
      : 'pgliteMemory' in store || store.kind === 'pglite'
        ? { DATA_DIR: ':memory:', REQUEST_LOG: join(dir, 'requests.log') }
        : { DATABASE_URL: store.url!, DATA_DIR: dir };
  const bundle = join(ROOT, 'dist', 'escrow-settlement.mjs');
  if (CFG.service === 'bundle' && !existsSync(bundle))
    throw new Error('BENCH_SERVICE=bundle needs dist/escrow-settlement.mjs: run npm run build');
  const args = [...CFG.nodeArgs, ...(CFG.service === 'bundle' ? [bundle] : ['--import', 'tsx', join(ROOT, 'src', 'main.ts')])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: env.PATH ?? '',
      HOME: env.HOME ?? '/tmp',
      PORT: '0',
      HOST: '127.0.0.1',
      ...(await benchKeys()).env,
      GROUP_COMMIT: CFG.groupCommit ? 'on' : 'off',
      HTTP_BODY: CFG.httpBody,
      ...storeEnv,
      ...extraEnv,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(child);
  let err = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in 60 s:\n${err}`)), 60_000);
    child.stderr!.on('data', (d) => {
      err = (err + d).slice(-20_000);
      const m = /"msg":"listening","url":"([^"]+)"/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`service exited before listening:\n${err}`));
    });
  });
  const pid = child.pid!;
  return {
    url,
    pid,
    rss: () => procStatusMb(pid),
    cpuMs: () => procCpuMs(pid),
    stderr: () => err,
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      children.delete(child);
    },
  };
}

/** Samples a child's VmRSS every `everyMs` until stopped; returns the largest sample. */
export function rssSampler(c: Child, everyMs = 100): { stop(): number } {
  let max = 0;
  const take = () => {
    try {
      max = Math.max(max, c.rss().rssMb);
    } catch {}
  };
  take();
  const t = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(t);
      take();
      return max;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A small keep-alive HTTP client (node:http), one agent per load level.

export interface HttpRes {
  status: number;
  text: string;
  json: any;
}

export interface Client {
  req(method: string, path: string, body?: unknown): Promise<HttpRes>;
  close(): void;
}

export function client(base: string, maxSockets: number): Client {
  const u = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  return {
    req(method, path, body) {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      return new Promise<HttpRes>((resolve, reject) => {
        const r = httpRequest(
          {
            agent,
            host: u.hostname,
            port: u.port,
            method,
            path,
            headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown;
              try {
                parsed = text ? JSON.parse(text) : undefined;
              } catch {
                parsed = undefined;
              }
              resolve({ status: res.statusCode ?? 0, text, json: parsed });
            });
            res.on('error', reject);
          },
        );
        r.on('error', reject);
        r.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

/** Runs `worker` on `n` concurrent loops until `seconds` have passed; returns the wall time taken (ms). */
export async function runFor(n: number, seconds: number, worker: (w: number, until: number) => Promise<void>): Promise<number> {
  const start = performance.now();
  const until = start + seconds * 1000;
  await Promise.all(Array.from({ length: n }, (_, w) => worker(w, until)));
  return performance.now() - start;
}

export function expectStatus(res: HttpRes, status: number, what: string): HttpRes {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${res.text.slice(0, 300)}`);
  return res;
}
