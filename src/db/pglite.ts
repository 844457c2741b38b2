// The Db interface over embedded PGlite: the default store when no DATABASE_URL is given.
import { PGlite } from '@electric-sql/pglite';
import { runAfterCommit, type AfterCommit, type Db, type Queryable, type Row, type Stmt, type Tx } from './types.ts';
import { migrate } from './migrate.ts';

type PgQ = Pick<PGlite, 'query'>;

function wrap(pg: PgQ): Queryable {
  const q = async <T extends Row>(text: string, params: unknown[] = []) => (await pg.query<T>(text, params)).rows;
  return {
    query: q,
    batch: async (stmts: Stmt[]) => {
      const out: Row[][] = [];
      for (const s of stmts) out.push(await q(s.text, s.params));
      return out;
    },
  };
}

/** The first statement error of a scope: it fails the scope even if fn caught it (as on Postgres, pgTx.ts). */
type Scope = { failed?: unknown };

/** A transaction scope; savepoints are plain SAVEPOINT statements (PGlite has one session, no pipeline). */
function wrapTx(t: PgQ, hooks: AfterCommit[], depth = 0, scope: Scope = {}): Tx {
  const raw = wrap(t);
  // As on Postgres (pgTx.ts), nothing may be sent after commitWith.
  let closed = false;
  const send = async <R>(first: string | undefined, run: () => Promise<R>): Promise<R> => {
    if (closed) throw new Error(`statement after the transaction's commit: ${(first ?? '').slice(0, 60)}`);
    try {
      return await run();
    } catch (err) {
      scope.failed ??= err;
      throw err;
    }
  };
  const base: Queryable = {
    query: (text, params) => send(text, () => raw.query(text, params)),
    batch: (stmts) => send(stmts[0]?.text, () => raw.batch(stmts)),
  };
  return {
    ...base,
    commitWith: async (stmts: Stmt[]) => {
      if (depth > 0) throw new Error('commitWith inside a savepoint');
      const rows = await base.batch(stmts);
      closed = true;
      return rows;
    },
    afterCommit: (fn) => {
      hooks.push(fn);
    },
    // Statements run in this process's PGlite; there is no connection to write to first.
    sent: async () => {},
    savepoint: async <T>(fn: (tx: Tx) => Promise<T>) => {
      const name = `sp_${depth + 1}`;
      const innerHooks: AfterCommit[] = [];
      const child: Scope = {};
      await t.query(`SAVEPOINT ${name}`);
      let r: T;
      try {
        r = await fn(wrapTx(t, innerHooks, depth + 1, child));
        if (child.failed) throw child.failed;
      } catch (err) {
        await t.query(`ROLLBACK TO SAVEPOINT ${name}`);
        await t.query(`RELEASE SAVEPOINT ${name}`);
        throw err;
      }
      await t.query(`RELEASE SAVEPOINT ${name}`);
      hooks.push(...innerHooks);
      return r;
    },
  };
}

/**
 * Memory (measured: an idle sandbox, `node --import tsx src/main.ts`). Postgres's own default of
 * 128 MB shared buffers lives inside PGlite's WASM memory; a sandbox's working set is a few MB, so
 * 16 MB is plenty and takes ~110 MB off the process. The rest of a fresh store's size is initdb,
 * which PGlite runs in the process that creates a data directory and whose memory that process does
 * not give back: the Node edge therefore creates a new directory (and every DATA_DIR=:memory:
 * sandbox, a throwaway directory there) in a short-lived child process with initPgliteDir, and the
 * service only ever opens an existing one (docs/design.md §7). openPglite still initialises in
 * process (tests, the bench, the Deno entry).
 */
export const PGLITE_OPTIONS = { postgresqlconf: 'shared_buffers = 16MB' };

/** dataDir ':memory:' keeps nothing; any other value is a directory persisted across restarts. */
export async function openPglite(dataDir: string): Promise<Db> {
  let pg = await PGlite.create(dataDir === ':memory:' ? 'memory://' : dataDir, PGLITE_OPTIONS);
  if (dataDir !== ':memory:') {
    // A data directory this service never migrated was just initialised (initdb ran in this
    // process): close and open it again, so initdb's WASM instance can be freed.
    const [{ fresh }] = (await pg.query<{ fresh: boolean }>(`SELECT to_regclass('schema_migrations') IS NULL AS fresh`)).rows;
    if (fresh) {
      await pg.close();
      pg = await PGlite.create(dataDir, PGLITE_OPTIONS);
    }
  }
  return asDb(pg);
}

/**
 * An in-memory store restored from a dump of a data directory (PGlite's `dumpDataDir`): no initdb and
 * no migrations to run, about a third of the CPU of a fresh one. The test harness opens its stores so.
 */
export async function openPgliteFromDump(dump: Blob): Promise<Db> {
  return asDb(await PGlite.create({ ...PGLITE_OPTIONS, loadDataDir: dump }));
}

/** A dump (uncompressed tar) of a fresh in-memory store with every migration applied. */
export async function migratedPgliteDump(): Promise<Blob> {
  const pg = await PGlite.create('memory://', PGLITE_OPTIONS);
  try {
    await migrate(asDb(pg));
    return await pg.dumpDataDir('none');
  } finally {
    await pg.close();
  }
}

function asDb(pg: PGlite): Db {
  const base = wrap(pg);
  return {
    kind: 'pglite',
    ...base,
    // PGlite has one connection: transactions run one at a time, which is exactly the
    // serialisation the row locks of the shared SQL ask for.
    tx: async <T>(fn: (tx: Tx) => Promise<T>) => {
      const hooks: AfterCommit[] = [];
      const r = await pg.transaction(async (t) => {
        const scope: Scope = {};
        const value = await fn(wrapTx(t, hooks, 0, scope));
        if (scope.failed) throw scope.failed;
        return value;
      });
      // After PGlite's transaction mutex is released: a hook may open a transaction of its own.
      await runAfterCommit(hooks);
      return r;
    },
    exec: async (text: string) => {
      await pg.exec(text);
    },
    close: () => pg.close(),
  };
}

/**
 * Creates a PGlite database in `dataDir` (initdb) and applies the migrations, then closes it: what
 * the Node edge's initialisation child runs. Returns the migration versions applied.
 */
export async function initPgliteDir(dataDir: string): Promise<number[]> {
  const pg = await PGlite.create(dataDir, PGLITE_OPTIONS);
  try {
    return await migrate(asDb(pg));
  } finally {
    await pg.close();
  }
}
