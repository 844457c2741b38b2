// The one small query interface that both postgres.js and PGlite sit behind, so both run the same SQL.

// biome-ignore lint/suspicious/noExplicitAny: a row is whatever its SELECT names; each reader types the columns it reads.
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
  /** Present inside Db.tx (see Tx): code that may run in or out of a transaction checks for it. */
  afterCommit?(fn: AfterCommit): void;
}

/** Work to do once a transaction has committed (waiting for its log leaves, poking a worker). Never throws. */
export type AfterCommit = () => Promise<unknown> | unknown;

/** A transaction: statements, plus what runs once it commits and nested scopes that can fail alone. */
export interface Tx extends Queryable {
  /**
   * Runs fn after this transaction commits, never after a rollback (nor after a rollback of the
   * savepoint it was registered in); Db.tx resolves once every fn has settled. Errors of fn are
   * swallowed: the transaction has committed, so its command has happened.
   */
  afterCommit(fn: AfterCommit): void;
  /**
   * Runs fn in a savepoint: if fn throws (a JS error or a database error), only fn's statements are
   * rolled back and the error is rethrown; the transaction stays usable. A statement error inside
   * it does not fail the enclosing scope once it is rolled back; outside any savepoint, a statement
   * error fails the transaction even if fn caught it (both stores; src/db/pgTx.ts on Postgres).
   */
  savepoint<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * The transaction's last statements, and its COMMIT: on Postgres they travel in one write with
   * COMMIT behind them (one round trip fewer per command), on PGlite they run and the transaction
   * commits when fn returns. Resolves with their rows once committed; rejects (rolled back) if any
   * fails. Nothing may be sent after it, and what fn does after it must not fail: on Postgres the
   * transaction has committed by then. Not inside a savepoint.
   */
  commitWith(stmts: Stmt[]): Promise<Row[][]>;
  /**
   * Resolves once every statement issued so far is on its way to the database, so CPU work done
   * after it overlaps their round trip instead of delaying it. On Postgres that takes two turns of
   * the event loop (postgres.js queues a statement a microtask after it is issued and flushes small
   * writes from a setImmediate of its own); PGlite has no connection to write to: at once.
   */
  sent(): Promise<void>;
}

/** How a transaction may run. */
export interface TxOptions {
  /**
   * The keys of what fn locks or reads to decide (an escrow, an idempotency scope, a mandate): with
   * group commit on (GROUP_COMMIT, Postgres only), fn may share one transaction with others that name
   * none of the same keys (src/db/groupCommit.ts says what that asks of fn: no savepoint, nothing
   * outside the database that a second run would repeat, every row it decides on under a key).
   * Absent: always a transaction of its own.
   */
  group?: readonly string[];
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction: commits when it resolves, rolls back when it throws. */
  tx<T>(fn: (tx: Tx) => Promise<T>, opts?: TxOptions): Promise<T>;
  /** Runs multi-statement SQL text without parameters (migrations). */
  exec(text: string): Promise<void>;
  /**
   * Counts the connections that have closed (Postgres only): after a change the next connection may
   * reach another server (a failover), which the log's anchor checks (src/tlog/anchor.ts).
   */
  connectionEpoch?(): number;
  close(): Promise<void>;
}

/** Postgres SQLSTATE of an error from either driver, if it carries one. */
/** Runs the hooks a committed transaction collected, all at once; their errors are dropped (see Tx.afterCommit). */
export async function runAfterCommit(hooks: AfterCommit[]): Promise<void> {
  if (hooks.length === 0) return;
  await Promise.allSettled(hooks.map(async (h) => h()));
}

export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

export const UNIQUE_VIOLATION = '23505';
