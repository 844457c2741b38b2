// Transactions over postgres.js with BEGIN and COMMIT pipelined (docs/design.md §3.3).
//
// postgres.js's sql.begin sends BEGIN and waits for it, then runs the callback, then sends COMMIT
// and waits for it: two of a command's round trips carry nothing but those words. Here a
// transaction reserves one connection and
//   - sends BEGIN in the same write as the transaction's first statement (nothing is sent at all
//     for a callback that issues no statement);
//   - sends COMMIT in the same write as the last batch when the command says which batch is last
//     (Tx.commitWith), and on its own after the callback otherwise.
// A lifecycle's create, fund and delivery go from 4, 4 and 5 round trips to 2, 2 and 3.
//
// What sql.begin did for us, done here:
//   - A statement that fails outside a savepoint fails the transaction, even if the callback
//     caught the error and went on: the callback's result is not returned and ROLLBACK is sent.
//   - A savepoint (SAVEPOINT / ROLLBACK TO / RELEASE, pipelined with the scope's statements) fails
//     alone: its errors do not fail the enclosing scope once it is rolled back.
//   - Nothing waits forever: the reservation and every statement are bounded (TxDeadlines).
//   - A lost connection: postgres.js calls the connection's `onclose` and hands the connection
//     back to its pool (which may reconnect it for someone else). From then on this transaction
//     sends nothing on it (a statement sent there would run outside the transaction, in another
//     session) and does not release it: every statement still waiting, and every later one, fails
//     at once with CONNECTION_CLOSED (docs/operations.md §1). postgres.js 3.4.9 itself answers only
//     the statements already written: those a reserved connection holds back in its own queue
//     (every statement after one that must first be described, so most of a fresh connection's)
//     are never answered nor sent once it closes. The same holds when a statement is the first to
//     hear of the loss (a socket error comes before the close; a single-statement transaction
//     registers no `onclose`): one statement failing with the connection fails them all, and no
//     ROLLBACK is sent after it. (Remove the rejection of held-back statements when postgres.js
//     answers its reserved queue on close; the `onclose` hook and the rest stay.)
import type postgres from 'postgres';
import { isConnectionLost } from './errors.ts';
import { runAfterCommit, type AfterCommit, type Row, type Stmt, type Tx } from './types.ts';

type Reserved = postgres.ReservedSql<Record<string, never>>;
type Conn = { onclose: ((e: unknown) => void) | null };

/** The error a statement gets once its transaction's connection is gone (isDatabaseUnavailable knows it). */
function closedError(cause: unknown): Error {
  return Object.assign(new Error('the database connection of this transaction was lost'), { code: 'CONNECTION_CLOSED', cause });
}

/** A failed COMMIT: the server answered ROLLBACK (a statement failed after the callback stopped looking). */
class RolledBack extends Error {
  code = '40000'; // transaction_rollback (class 40); never one of the outage codes
}

/**
 * Bounds, past which the database is taken as unreachable (QUERY_DEADLINE: 503 upstream, and the
 * pool is renewed). Seen in the outage test: a reservation queued while no connection could be made
 * waits forever once its pool is replaced (postgres.js ends a pool without answering its queued
 * reservations); and a statement on a connection left unable to write (porsager/postgres#1154) is
 * never answered. A statement here takes milliseconds; the statement bound is generous for lock
 * waits (a migration under its advisory lock, a row another transaction holds).
 */
export interface TxDeadlines {
  reserveMs: number;
  statementMs: number;
}

/** One turn of the event loop: setImmediate where there is one (Node), else a zero timeout (Deno). */
const nextTurn = (): Promise<void> =>
  new Promise((resolve) => {
    const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
    if (immediate) immediate(resolve);
    else setTimeout(resolve, 0);
  });

const deadlineError = (what: string, ms: number) =>
  Object.assign(new Error(`no answer from Postgres within ${ms / 1000} s (${what})`), { code: 'QUERY_DEADLINE' });

/** p, or a QUERY_DEADLINE rejection after ms; onLate runs with p's value if it arrives after that. */
function bounded<T>(p: Promise<T>, ms: number, what: string, onLate?: (v: T) => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let late = false;
  return Promise.race([
    p.then((v) => {
      if (late) onLate?.(v);
      return v;
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(deadlineError(what, ms));
      }, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Runs fn in a transaction on a reserved connection. Resolves once COMMIT has been answered; rejects
 * with fn's error, or the first statement error, after ROLLBACK. The connection is released unless
 * it was lost.
 */
export async function pipelinedTx<T>(
  reserve: () => Promise<Reserved>,
  fn: (tx: Tx) => Promise<T>,
  deadlines: TxDeadlines,
  prepare = true,
): Promise<T> {
  // A reservation that comes after its deadline goes straight back to the pool.
  const r = await bounded(reserve(), deadlines.reserveMs, 'waiting for a connection', (late) => late.release());
  let conn: Conn | undefined;
  let lost: Error | undefined;
  /** Rejects (with `lost`) once the connection is lost: every statement still waiting fails with it. */
  let abandon!: (err: Error) => void;
  const abandoned = new Promise<never>((_, reject) => {
    abandon = reject;
  });
  abandoned.catch(() => {});
  const lose = (err: Error) => {
    if (lost) return;
    lost = err;
    abandon(err);
  };
  let begun = false;
  /** 'open' until COMMIT or ROLLBACK has been sent. */
  let state: 'open' | 'committing' | 'done' = 'open';
  /** commitWith's COMMIT was answered COMMIT: from here the command has happened, whatever fn does next. */
  let committed = false;
  let savepoints = 0;
  const hooks: AfterCommit[] = [];

  // postgres.js calls this as BEGIN is written. Its answer matters: a falsy one marks the
  // connection full, and every later statement would then wait for the one before it (a round
  // trip each) instead of being pipelined.
  const onclose = (e: unknown) => lose(closedError(e));
  const onexecute = (c: Conn): true => {
    conn = c;
    c.onclose = onclose;
    return true;
  };
  /** Sends one statement; BEGIN goes first, in the same write, if nothing was sent yet. */
  const send = (text: string, params: unknown[] = [], alone = false): Promise<Row[]> => {
    if (lost) return Promise.reject(lost);
    if (!begun && !alone) {
      begun = true;
      // Sent with the statement below (postgres.js coalesces writes of one tick); its failure is
      // the statement's failure too, so its own promise only needs a handler.
      r.unsafe('BEGIN', [], { onexecute } as never)
        .execute()
        .catch(() => {});
    }
    const q = r.unsafe(
      text,
      params as postgres.ParameterOrJSON<never>[],
      (alone ? { prepare, onexecute } : { prepare }) as never,
    ) as unknown as Promise<Row[]>;
    return bounded(Promise.race([q, abandoned]), deadlines.statementMs, text.slice(0, 40)).catch((err) => {
      // Unanswered: the connection cannot be trusted with anything more, nor given back.
      if ((err as { code?: string }).code === 'QUERY_DEADLINE') lose(err);
      // Its connection is gone: so is the transaction, whichever statement heard of it first.
      else if (isConnectionLost(err)) lose(closedError(err));
      if (lost) throw lost;
      throw err;
    });
  };

  function scope(level: { failed?: unknown }, depth: number): Tx {
    const query = <R extends Row>(text: string, params?: unknown[]): Promise<R[]> => {
      if (state !== 'open') return Promise.reject(new Error(`statement after the transaction's commit: ${text.slice(0, 60)}`));
      return send(text, params).catch((err) => {
        level.failed ??= err;
        throw err;
      }) as Promise<R[]>;
    };
    const batch = (stmts: Stmt[]) => Promise.all(stmts.map((s) => query(s.text, s.params)));
    return {
      query,
      batch,
      commitWith: async (stmts: Stmt[]) => {
        if (depth > 0) throw new Error('commitWith inside a savepoint');
        if (!begun && stmts.length === 1) {
          // The transaction's only statement (a command's fused write, src/db/fuse.ts): sent alone,
          // it is its own transaction on the server (atomic, committed once it is answered), so
          // neither BEGIN nor COMMIT travels with it.
          state = 'done';
          const rows = await send(stmts[0].text, stmts[0].params, true).catch((err) => {
            throw (level.failed ??= err);
          });
          committed = true;
          return [rows];
        }
        const out = batch(stmts);
        state = 'committing';
        const commit = send('COMMIT');
        const [rows, done] = await Promise.allSettled([out, commit]);
        state = 'done';
        if (rows.status === 'rejected') throw rows.reason;
        if (done.status === 'rejected') throw (level.failed ??= done.reason);
        if ((done.value as unknown as { command?: string }).command !== 'COMMIT')
          throw (level.failed ??= new RolledBack('the transaction was rolled back'));
        committed = true;
        return rows.value;
      },
      afterCommit: (h) => {
        hooks.push(h);
      },
      // postgres.js runs a query a microtask after it is issued, and writes what a tick queued from a
      // setImmediate of its own (at once from 1 KB): the second turn starts after that write.
      sent: async () => {
        await nextTurn();
        await nextTurn();
      },
      savepoint: async <S>(inner: (tx: Tx) => Promise<S>) => {
        const name = `sp_${++savepoints}`;
        const mark = hooks.length;
        const child: { failed?: unknown } = {};
        void query(`SAVEPOINT ${name}`).catch(() => {});
        let value: S;
        try {
          value = await inner(scope(child, depth + 1));
          if (child.failed) throw child.failed;
        } catch (err) {
          hooks.length = mark; // hooks of a rolled-back savepoint never run
          if (!lost && state === 'open')
            await send(`ROLLBACK TO SAVEPOINT ${name}`).catch((e) => {
              level.failed ??= e;
            });
          throw err;
        }
        // Not waited for: it goes with the next statements (the next savepoint of a sweep pass); a
        // failure fails the enclosing scope, so the transaction cannot commit past it.
        void query(`RELEASE SAVEPOINT ${name}`).catch(() => {});
        return value;
      },
    };
  }

  const top: { failed?: unknown } = {};
  let result: T;
  try {
    result = await fn(scope(top, 0));
    if (top.failed) throw top.failed;
    if (state === 'open' && begun) {
      state = 'done';
      const done = (await send('COMMIT')) as unknown as { command?: string };
      if (done.command !== 'COMMIT') throw new RolledBack('the transaction was rolled back');
    }
  } catch (err) {
    if (!lost && begun && state === 'open') {
      state = 'done';
      await send('ROLLBACK').catch(() => {});
    }
    finish();
    // Committed by commitWith, then fn threw: the hooks are the committed command's, so they run.
    if (committed) await runAfterCommit(hooks);
    throw lost ?? err;
  }
  finish();
  await runAfterCommit(hooks);
  return result;

  function finish() {
    // Only our own hook: once lost, the connection may already be another transaction's.
    if (conn && conn.onclose === onclose) conn.onclose = null;
    // A lost connection is not released: a closed one is already back in its pool (postgres.js's
    // onclose), and an unanswered one cannot be trusted; its QUERY_DEADLINE renews the whole pool
    // (at most once a second, src/db/postgres.ts), which is what frees its slot.
    if (!lost) r.release();
  }
}
