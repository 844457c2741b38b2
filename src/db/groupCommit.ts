// Group commit (docs/performance.md §4.6): transactions that arrive together run as ONE transaction on
// one connection, so one BEGIN … COMMIT and one WAL flush serve many commands. Each command keeps its
// own statements (its fused write, src/db/fuse.ts); they are pipelined on the shared connection in
// the order the commands issue them.
//
// Who may join: a Db.tx call that names its keys (TxOptions.group: the escrow it locks, its
// idempotency scope …). A group never holds two members with a key in common, so no two members
// touch the same escrow or claim the same idempotency key: each behaves as it would alone, and two
// commands on one escrow stay two transactions, one after the other (the second sends the first's
// group on its way if it is still waiting to start, then runs by itself, waiting for the escrow's
// row lock as it would with group commit off).
//
// When a group starts: at the end of the event-loop turn in which its first member arrived when no
// other group is running, else after WINDOW_MS (the database is busy: a little longer buys more
// members per commit), or at once when it is full. A group of one runs as a plain transaction.
//
// How a member fails:
//   - on its own checks (a thrown error) having sent only SELECTs (reads and row locks): alone, at
//     once; the group goes on and its locks go with the group's COMMIT. (A SELECT of a function that
//     writes would count as a read: the service has none, lock_escrow only locks.)
//   - having written something first (any statement not a SELECT), on a savepoint (one connection
//     cannot hold one member's savepoint beside another's statements), or by a statement error (the
//     server aborts the whole transaction): the group rolls back and every member still running is
//     run again in a transaction of its own, as if group commit were off. So a member's fn may run
//     twice, the first run rolled back: it must do nothing outside the database that a second run
//     would repeat (the escrow commands' custody is simulated when they group: src/escrow/deps.ts);
//   - a lost connection or a deadline (the outcome of the COMMIT unknown): every member gets that
//     error, as each would have alone, and none is run again (it may have committed).
import { isDatabaseUnavailable } from './errors.ts';
import { runAfterCommit, type AfterCommit, type Row, type Stmt, type Tx } from './types.ts';

/** Runs fn in a transaction of its own (src/db/pgTx.ts). */
export type RunTx = <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;

/** The most members one transaction holds. */
export const GROUP_MAX = 32;
/** How long a group waits for more members while another group is running. */
export const WINDOW_MS = 1;

/** Why a member's statement was refused: its group has already failed (the member will run again alone). */
class GroupFailed extends Error {
  constructor() {
    super('this transaction is run again on its own');
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Member {
  keys: readonly string[];
  fn: (tx: Tx) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** Sent a statement that is not a SELECT. */
  wrote: boolean;
  /** One of its statements was refused (by the server, or because the group had failed). */
  refused: boolean;
  /** running → ready (its last statements sent by commitWith, waiting for COMMIT) → settled (fn returned or threw). */
  phase: 'running' | 'ready' | 'settled';
  outcome?: Outcome;
  /** Failed on its own checks and told so: nothing more to do for it. */
  alone: boolean;
  hooks: AfterCommit[];
  /** Resolves when fn has returned or thrown. */
  settled: Promise<void>;
}

interface Group {
  members: Member[];
  keys: Set<string>;
  started: boolean;
  /** The first reason the group cannot commit. */
  failed?: { error: unknown };
  /** Resolves once the group's COMMIT is answered; rejects once it is known not to commit. */
  committed: Promise<void>;
}

const isSelect = (text: string) => /^\s*SELECT\s/i.test(text);

/** One turn of the event loop: setImmediate where there is one (Node), else a zero timeout (Deno). */
const nextTurn = (fn: () => void) => {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (immediate) immediate(fn);
  else setTimeout(fn, 0);
};

/** The members in key order: two groups that lock the same escrows then mostly lock them in the same order. */
const byKey = (a: Member, b: Member) => {
  const x = a.keys[0] ?? '';
  const y = b.keys[0] ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
};

export interface GroupCommit {
  /** Runs fn in a group's transaction (or alone, see above); settles as Db.tx does. */
  run<T>(keys: readonly string[], fn: (tx: Tx) => Promise<T>): Promise<T>;
}

export function groupCommit(runTx: RunTx): GroupCommit {
  let pending: Group | undefined;
  /** Keys of the groups started and not finished, with how many hold each. */
  const busy = new Map<string, number>();
  let running = 0;

  function start(g: Group) {
    if (g.started) return;
    g.started = true;
    if (pending === g) pending = undefined;
    for (const k of g.keys) busy.set(k, (busy.get(k) ?? 0) + 1);
    running++;
    const done = g.members.length === 1 ? runTx(g.members[0].fn).then(g.members[0].resolve, g.members[0].reject) : execute(g);
    void done.finally(() => {
      running--;
      for (const k of g.keys) {
        const n = busy.get(k)! - 1;
        if (n === 0) busy.delete(k);
        else busy.set(k, n);
      }
    });
  }

  async function execute(g: Group): Promise<void> {
    const members = [...g.members].sort(byKey);
    let commit!: { resolve: () => void; reject: (e: unknown) => void };
    g.committed = new Promise<void>((resolve, reject) => {
      commit = { resolve, reject };
    });
    g.committed.catch(() => {}); // members waiting in commitWith see it; nobody else must

    let error: unknown;
    let ok = false;
    try {
      await runTx(async (shared) => {
        await new Promise<void>((allIn) => {
          let left = members.length;
          const arrived = () => {
            if (--left === 0) allIn();
          };
          for (const m of members) begin(g, m, shared, arrived);
        });
        if (g.failed) throw g.failed.error;
      });
      ok = true;
    } catch (err) {
      error = err;
    }

    if (ok) {
      commit.resolve();
      await Promise.all(
        members.map(async (m) => {
          if (m.alone) return;
          await m.settled;
          // The transaction committed: a member's hooks run even if its fn threw after commitWith (Tx.afterCommit).
          await runAfterCommit(m.hooks);
          const o = m.outcome!;
          if (o.ok) m.resolve(o.value);
          else m.reject(o.error);
        }),
      );
      return;
    }
    g.failed ??= { error };
    commit.reject(new GroupFailed());
    await Promise.all(members.map((m) => m.settled));
    const again = members.filter((m) => !m.alone);
    // The COMMIT may have happened (the connection went before its answer): as a lone transaction would.
    if (isDatabaseUnavailable(error)) {
      for (const m of again) m.reject(error);
      return;
    }
    await Promise.all(again.map((m) => runTx(m.fn).then(m.resolve, m.reject)));
  }

  /** Starts member m's fn on its view of the group's transaction; `arrived` once it is ready or settled. */
  function begin(g: Group, m: Member, shared: Tx, arrived: () => void) {
    let counted = false;
    const arrive = () => {
      if (!counted) {
        counted = true;
        arrived();
      }
    };
    const fail = (error: unknown) => {
      g.failed ??= { error };
    };
    const query = <R extends Row>(text: string, params?: unknown[]): Promise<R[]> => {
      if (g.failed) {
        m.refused = true;
        return Promise.reject(new GroupFailed());
      }
      if (m.phase !== 'running') return Promise.reject(new Error(`statement after the transaction's commit: ${text.slice(0, 60)}`));
      if (!isSelect(text)) m.wrote = true;
      return shared.query<R>(text, params).catch((err) => {
        m.refused = true;
        fail(err);
        throw err;
      });
    };
    const batch = (stmts: Stmt[]) => Promise.all(stmts.map((s) => query(s.text, s.params)));
    const view: Tx = {
      query,
      batch,
      commitWith: async (stmts: Stmt[]) => {
        const rows = batch(stmts);
        m.phase = 'ready';
        arrive();
        const [out] = await Promise.all([rows, g.committed]);
        return out;
      },
      afterCommit: (h) => {
        m.hooks.push(h);
      },
      sent: () => shared.sent(),
      savepoint: () => {
        m.refused = true;
        const err = new GroupFailed();
        fail(err);
        return Promise.reject(err);
      },
    };
    m.settled = Promise.resolve()
      .then(() => m.fn(view))
      .then(
        (value) => {
          m.outcome = { ok: true, value };
        },
        (error) => {
          m.outcome = { ok: false, error };
          if (m.phase !== 'running') return;
          if (!m.wrote && !m.refused) {
            // Its own checks refused it before it wrote anything: it fails alone, now.
            m.alone = true;
            m.reject(error);
          } else fail(error);
        },
      )
      .finally(() => {
        m.phase = 'settled';
        arrive();
      });
  }

  return {
    run<T>(keys: readonly string[], fn: (tx: Tx) => Promise<T>): Promise<T> {
      if (pending && keys.some((k) => pending!.keys.has(k))) start(pending);
      if (keys.some((k) => busy.has(k))) return runTx(fn);
      return new Promise<T>((resolve, reject) => {
        const m: Member = {
          keys,
          fn: fn as (tx: Tx) => Promise<unknown>,
          resolve: resolve as (v: unknown) => void,
          reject,
          wrote: false,
          refused: false,
          phase: 'running',
          alone: false,
          hooks: [],
          settled: Promise.resolve(),
        };
        if (!pending) {
          const g: Group = { members: [], keys: new Set(), started: false, committed: Promise.resolve() };
          pending = g;
          if (running > 0) setTimeout(() => start(g), WINDOW_MS);
          else nextTurn(() => start(g));
        }
        pending.members.push(m);
        for (const k of keys) pending.keys.add(k);
        if (pending.members.length >= GROUP_MAX) start(pending);
      });
    },
  };
}
