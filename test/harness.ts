// Test harness: the same suite on embedded PGlite and, when TEST_DATABASE_URL is set, on real
// Postgres (each harness in a schema of its own, dropped afterwards).
import { pgDriverOptions, type PgDriverOptions } from '../src/db/pgOptions.ts';
import { after, before, describe } from 'node:test';
import { parseConfig, type Config } from '../src/config.ts';
import { createApp, type App, type AppDeps } from '../src/app.ts';
import { openPglite, openPgliteFromDump } from '../src/db/pglite.ts';
import { migratedDump } from './pgliteDump.ts';
import { openPostgres } from '../src/db/postgres.ts';
import { MIGRATIONS, migrate, splitStatements } from '../src/db/migrate.ts';
import type { Db } from '../src/db/types.ts';
import { ensureKeys, type StartKeys } from '../src/proof/keyEras.ts';
import { memoryKey } from '../src/proof/keys.ts';

/**
 * The service keys of every harness in this test process, held in memory as DATA_DIR=:memory:
 * holds them: every store a test opens takes them as its first eras, and two apps on one store
 * (twoInstances) sign with the same keys, as two instances configured alike do.
 */
export const TEST_KEYS: StartKeys = { issuer: memoryKey(), webhook: memoryKey() };

export type StoreKind = 'pglite' | 'postgres';

export const STORES: StoreKind[] = ['pglite', ...(process.env.TEST_DATABASE_URL ? (['postgres'] as const) : [])];
export const PG_URL = process.env.TEST_DATABASE_URL;

export interface Res {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

export interface Harness {
  kind: StoreKind;
  app: App;
  db: Db;
  config: Config;
  req(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res>;
  close(): Promise<void>;
}

let schemaSeq = 0;

export interface StoreOptions {
  schema?: string;
  max?: number;
  /** Sees every statement written to Postgres, BEGIN and COMMIT included. */
  onStatement?: (text: string) => void;
  /** Postgres driver settings over those of the environment (src/db/pgOptions.ts). */
  driver?: Partial<PgDriverOptions>;
}

/** Opens a fresh, migrated store of the given kind. */
export async function openStore(kind: StoreKind, opts: StoreOptions = {}): Promise<{ db: Db; drop: () => Promise<void> }> {
  const store = kind === 'pglite' ? await openMigratedPglite() : await openEmptyStore(kind, opts);
  await migrate(store.db);
  await ensureKeys(store.db, TEST_KEYS);
  return store;
}

/**
 * A store migrated only up to (not including) migration `below`, as a deployment of an earlier
 * release left it: a migration's test fills it, then `finish()` runs the rest as a start-up would.
 */
export async function openStoreBefore(
  kind: StoreKind,
  below: number,
): Promise<{ db: Db; finish: () => Promise<void>; drop: () => Promise<void> }> {
  const { db, drop } = await openEmptyStore(kind);
  await db.tx(async (tx) => {
    await tx.query(
      'CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    for (const m of MIGRATIONS.filter((x) => x.version < below)) {
      for (const stmt of splitStatements(m.sql)) await tx.query(stmt);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
  });
  const finish = async () => {
    await migrate(db);
    await ensureKeys(db, TEST_KEYS);
  };
  return { db, finish, drop };
}

/** PGlite in memory restored from the migrated dump (test/pgliteDump.ts); `migrate` then finds nothing to do. */
async function openMigratedPglite(): Promise<{ db: Db; drop: () => Promise<void> }> {
  const db = await openPgliteFromDump(await migratedDump());
  return { db, drop: () => db.close() };
}

/** An empty store: PGlite in memory, or a Postgres schema of its own that `drop` removes. */
async function openEmptyStore(kind: StoreKind, opts: StoreOptions = {}): Promise<{ db: Db; drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    const db = await openPglite(':memory:');
    return { db, drop: () => db.close() };
  }
  const schema = opts.schema ?? `t_${process.pid}_${Date.now().toString(36)}_${schemaSeq++}`;
  const admin = openPostgres(PG_URL!, { max: 1 });
  await admin.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await admin.close();
  // PG_PREPARE, GROUP_COMMIT … (src/db/pgOptions.ts) apply here too, so a driver setting can be tried against the suite.
  const driver = { ...pgDriverOptions(process.env), ...opts.driver };
  const db = openPostgres(PG_URL!, { schema, max: opts.max ?? 10, onStatement: opts.onStatement, driver });
  return {
    db,
    drop: async () => {
      await db.close();
      const a = openPostgres(PG_URL!, { max: 1 });
      await a.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await a.close();
    },
  };
}

/** Sees every answer a requester reads (a reliability case counts and logs them). */
export type Observe = (method: string, path: string, res: Response, text: string) => void;

/**
 * The one request helper of the suite: a Request through `app.fetch` as a user's would arrive, the
 * answer read as text and, when it is JSON, parsed. `x-test-ip` sets the client address.
 */
export function requester(app: App, observe?: Observe): Harness['req'] {
  return async (method, path, body, headers = {}) => {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await app.fetch(new Request(`http://test.local${path}`, init), { ip: headers['x-test-ip'] ?? '127.0.0.1' });
    const text = await res.text();
    observe?.(method, path, res, text);
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
}

/** A harness on a fresh store (or a shared one), its app built with `deps` beside the store and config. */
export async function makeHarness(
  kind: StoreKind,
  env: Record<string, string> = {},
  shared?: { db: Db },
  deps: Partial<AppDeps> = {},
): Promise<Harness> {
  const store = shared ? { db: shared.db, drop: async () => {} } : await openStore(kind);
  const config = parseConfig({ DATA_DIR: ':memory:', ...env });
  const app = createApp({ db: store.db, config, ...deps });
  return { kind, app, db: store.db, config, req: requester(app), close: store.drop };
}

/**
 * Two app instances on two pools over one Postgres schema, as two processes would be: `db` is the
 * first instance's pool (for assertions), `close` drops the schema.
 */
export async function twoInstances(tag: string, env: Record<string, string> = {}) {
  const schema = `t_${tag}_${process.pid}_${Date.now().toString(36)}_${schemaSeq++}`;
  const s1 = await openStore('postgres', { schema });
  const s2 = await openStore('postgres', { schema });
  const a = await makeHarness('postgres', env, { db: s1.db });
  const b = await makeHarness('postgres', env, { db: s2.db });
  return {
    a,
    b,
    db: s1.db,
    close: async () => {
      await s1.db.close();
      await s2.drop();
    },
  };
}

/**
 * Declares the suite once per store. `h()` returns the harness inside tests.
 */
export function describeStores(
  title: string,
  body: (h: () => Harness) => void,
  env: Record<string, string> = {},
  deps: Partial<AppDeps> = {},
) {
  for (const kind of STORES) {
    describe(`${title} [${kind}]`, () => {
      let harness: Harness;
      before(async () => {
        harness = await makeHarness(kind, env, undefined, deps);
      });
      after(async () => {
        await harness?.close();
      });
      body(() => harness);
    });
  }
}

/** Asserts an error envelope with the given status and code; returns the message. */
export function expectError(res: Res, status: number, code: string): string {
  if (res.status !== status || res.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${res.status} ${res.text}`);
  }
  const e = res.body.error;
  if (typeof e.message !== 'string' || e.docsUrl !== `/docs/errors#${code}`) throw new Error(`malformed envelope: ${res.text}`);
  return e.message as string;
}
