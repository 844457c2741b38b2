// The Db interface over postgres.js, for DATABASE_URL deployments.
import postgres from 'postgres';
import type { Db, Queryable, Row, Stmt } from './types.ts';

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

export function openPostgres(url: string, opts: { max?: number; schema?: string } = {}): Db {
  const sql = postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    // Types are read the same way as PGlite reads them: int8 and numeric are cast in SQL where
    // needed, timestamps come back as Date.
    connection: { application_name: 'escrow-settlement', ...(opts.schema ? { search_path: opts.schema } : {}) },
  });
  const base = wrap(sql);
  return {
    kind: 'postgres',
    ...base,
    tx: <T>(fn: (tx: Queryable) => Promise<T>) => sql.begin((t) => fn(wrap(t))) as Promise<T>,
    exec: async (text: string) => {
      await sql.unsafe(text);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
