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

/** dataDir ':memory:' keeps nothing; any other value is a directory persisted across restarts. */
export async function openPglite(dataDir: string): Promise<Db> {
  const pg = await PGlite.create(dataDir === ':memory:' ? 'memory://' : dataDir);
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
