// The Db interface over embedded PGlite: the default store when no DATABASE_URL is given.
import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable, Row, Stmt } from './types.ts';

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

/** dataDir ':memory:' keeps nothing; any other value is a directory persisted across restarts. */
export async function openPglite(dataDir: string): Promise<Db> {
  const pg = await PGlite.create(dataDir === ':memory:' ? 'memory://' : dataDir);
  const base = wrap(pg);
  return {
    kind: 'pglite',
    ...base,
    // PGlite has one connection: transactions run one at a time, which is exactly the
    // serialisation the row locks of the shared SQL ask for.
    tx: <T>(fn: (tx: Queryable) => Promise<T>) => pg.transaction((t) => fn(wrap(t))),
    exec: async (text: string) => {
      await pg.exec(text);
    },
    close: () => pg.close(),
  };
}
