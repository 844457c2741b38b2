// The Db interface over postgres.js, for DATABASE_URL deployments.
import postgres from 'postgres';
import { runAfterCommit, type AfterCommit, type Db, type Queryable, type Row, type Stmt, type Tx } from './types.ts';

type Sql = postgres.Sql | postgres.TransactionSql;

function wrap(sql: Sql): Queryable {
  const q = <T extends Row>(text: string, params: unknown[] = []) =>
    sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }) as unknown as Promise<T[]>;
  return {
    query: q,
    // Inside a transaction postgres.js pipelines queries issued together on its one connection:
    // one network round trip for the whole batch.
    batch: (stmts: Stmt[]) => Promise.all(stmts.map((s) => q(s.text, s.params))),
  };
}

/** A transaction scope; a savepoint collects its own hooks and hands them up only if it succeeds. */
function wrapTx(t: postgres.TransactionSql, hooks: AfterCommit[]): Tx {
  return {
    ...wrap(t),
    afterCommit: (fn) => {
      hooks.push(fn);
    },
    savepoint: async <T>(fn: (tx: Tx) => Promise<T>) => {
      const inner: AfterCommit[] = [];
      const r = (await t.savepoint((s) => fn(wrapTx(s, inner)))) as T;
      hooks.push(...inner);
      return r;
    },
  };
}

export function openPostgres(url: string, opts: { max?: number; schema?: string; applicationName?: string } = {}): Db {
  const sql = postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    // Types are read the same way as PGlite reads them: int8 and numeric are cast in SQL where
    // needed, timestamps come back as Date.
    connection: { application_name: opts.applicationName ?? 'escrow-settlement', ...(opts.schema ? { search_path: opts.schema } : {}) },
  });
  const base = wrap(sql);
  return {
    kind: 'postgres',
    ...base,
    tx: async <T>(fn: (tx: Tx) => Promise<T>) => {
      const hooks: AfterCommit[] = [];
      const r = (await sql.begin((t) => fn(wrapTx(t, hooks)))) as T;
      await runAfterCommit(hooks);
      return r;
    },
    exec: async (text: string) => {
      await sql.unsafe(text);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
