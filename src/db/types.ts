// The one small query interface that both postgres.js and PGlite sit behind, so both run the same SQL.

export type Row = Record<string, any>;

export interface Stmt {
  text: string;
  params?: unknown[];
}

export interface Queryable {
  /** One statement, positional parameters ($1, $2 …), rows as plain objects. */
  query<T extends Row = Row>(text: string, params?: unknown[]): Promise<T[]>;
  /**
   * Several statements sent together where the driver can pipeline them (postgres.js inside a
   * transaction), one after another otherwise (PGlite). Results come back in order.
   */
  batch(stmts: Stmt[]): Promise<Row[][]>;
}

export type Tx = Queryable;

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction: commits when it resolves, rolls back when it throws. */
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** Runs multi-statement SQL text without parameters (migrations). */
  exec(text: string): Promise<void>;
  close(): Promise<void>;
}

/** Postgres SQLSTATE of an error from either driver, if it carries one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

export const UNIQUE_VIOLATION = '23505';
