// The Db interface over embedded PGlite: the default store when no DATABASE_URL is given.
import { PGlite } from '@electric-sql/pglite';
import { runAfterCommit, type AfterCommit, type Db, type Queryable, type Row, type Stmt, type Tx } from './types.ts';

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

/** A transaction scope; savepoints are plain SAVEPOINT statements (PGlite has one session, no pipeline). */
function wrapTx(t: PgQ, hooks: AfterCommit[], depth = 0): Tx {
  const base = wrap(t);
  return {
    ...base,
    afterCommit: (fn) => {
      hooks.push(fn);
    },
    savepoint: async <T>(fn: (tx: Tx) => Promise<T>) => {
      const name = `sp_${depth + 1}`;
      const inner: AfterCommit[] = [];
      await t.query(`SAVEPOINT ${name}`);
      let r: T;
      try {
        r = await fn(wrapTx(t, inner, depth + 1));
      } catch (err) {
        await t.query(`ROLLBACK TO SAVEPOINT ${name}`);
        await t.query(`RELEASE SAVEPOINT ${name}`);
        throw err;
      }
      await t.query(`RELEASE SAVEPOINT ${name}`);
      hooks.push(...inner);
      return r;
    },
  };
}

/**
 * Memory (measured: an idle sandbox, `node --import tsx src/main.ts`). Postgres's own default of
 * 128 MB shared buffers lives inside PGlite's WASM memory; a sandbox's working set is a few MB, so
 * 16 MB is plenty and takes ~110 MB off the process. The rest of a fresh store's size is initdb,
 * which PGlite runs in the same process on the first start of a data directory (or on every start
 * with DATA_DIR=:memory:) and whose memory the process does not give back; a restart over an
 * existing DATA_DIR does not pay it (README, Operations).
 */
const PGLITE_OPTIONS = { postgresqlconf: 'shared_buffers = 16MB' };

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
  const base = wrap(pg);
  return {
    kind: 'pglite',
    ...base,
    // PGlite has one connection: transactions run one at a time, which is exactly the
    // serialisation the row locks of the shared SQL ask for.
    tx: async <T>(fn: (tx: Tx) => Promise<T>) => {
      const hooks: AfterCommit[] = [];
      const r = await pg.transaction((t) => fn(wrapTx(t, hooks)));
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
