// The in-process integrator: one loop per instance that runs integration batches (integrate.ts)
// while anything is pending, and lets a closing wait, bounded, until its leaf has an index.
//
// Woken three ways: by this instance's own closings right after they commit (poke), by a short poll
// while a closing still waits after a failed batch, and by the jobs' periodic tick (drain), which
// picks up leaves another instance committed and then died before integrating. Nothing notifies
// across instances: a waiter's own loop runs a batch, whose advisory lock waits for any batch in
// progress elsewhere; once granted, every leaf committed before is either in this batch or already
// integrated by that other batch, so a batch that was not full answers every waiter older than it.
//
// Two kinds of batch (integrate.ts): a full one (2 round trips) reads the log and takes every pending
// leaf; one from this integrator's tip (1 round trip, integrateKnown) appends only the leaves this
// instance's closings handed over with their hashes, and answers nobody by elimination. The tip is
// the log as this integrator's last successful batch left it; any failure forgets it, and a batch
// that finds the log moved (StaleTip) is followed by full batches only, for staleBackoffMs.
import type { Db } from '../db/types.ts';
import {
  integrateBatch,
  integrateKnown,
  StaleTip,
  type BatchResult,
  type Integrated,
  type IntegrateOptions,
  type KnownLeaf,
  type Tip,
} from './integrate.ts';

export interface LogIntegrator {
  /** Asks for a batch soon (after a commit that sequenced leaves). */
  poke(): void;
  /**
   * Resolves true once every entry is integrated (by any instance), false if `waitMs` passes
   * first. Call it only after the transaction that sequenced the entries has committed. An entry
   * given with its leaf hash can be integrated by a one-round-trip batch (integrateKnown).
   */
  settled(entries: Array<string | KnownLeaf>, waitMs?: number): Promise<boolean>;
  /** Runs batches until nothing is pending (start-up and the periodic tick). */
  drain(): Promise<void>;
  /** Stops the loop; waiting callers are answered false. */
  stop(): Promise<void>;
}

export interface IntegratorOptions extends IntegrateOptions {
  /** Default bound of settled() (LOG_INTEGRATE_WAIT_MS). */
  waitMs: number;
  /** Retry delay after a failed batch while someone waits. */
  pollMs?: number;
  onError?: (err: unknown) => void;
  onBatch?: (done: Integrated[]) => void;
  /** How long (ms) to run only full batches after a one-round-trip batch found the log moved (another instance integrates too). */
  staleBackoffMs?: number;
  /**
   * Asked before every batch: false holds every pending leaf where it is (the database is behind its
   * witnesses, or they have not answered yet: src/tlog/gate.ts). Whoever closes the gate pokes the
   * integrator again when it opens.
   */
  mayAppend?: () => boolean;
}

interface Waiter {
  /** The first batch number that can answer this waiter by elimination (started after it). */
  fromBatch: number;
  resolve: (ok: boolean) => void;
}

export function createIntegrator(db: Db, opts: IntegratorOptions): LogIntegrator {
  const pollMs = opts.pollMs ?? 10;
  const staleBackoffMs = opts.staleBackoffMs ?? 1000;
  const waiters = new Map<string, Waiter[]>();
  // Leaf hashes of the waited-for entries that came with one (this instance's own closings).
  const hashes = new Map<string, string>();
  let started = 0;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  // The log as this integrator's last batch left it; unset after any failure or surprise.
  let tip: Tip | undefined;
  let fullOnlyUntil = 0;
  // drain() asked for a full batch (leaves nobody here waits for: a crashed instance's).
  let wantFull = false;

  const forget = (id: string) => {
    waiters.delete(id);
    hashes.delete(id);
  };
  const answer = (id: string, ok: boolean) => {
    for (const w of waiters.get(id) ?? []) w.resolve(ok);
    forget(id);
  };

  /** The waited-for leaves a one-round-trip batch can take: all of them, or none if one came without its hash. */
  function known(): KnownLeaf[] | undefined {
    if (!tip || wantFull || performance.now() < fullOnlyUntil || waiters.size === 0) return undefined;
    const leaves: KnownLeaf[] = [];
    for (const id of waiters.keys()) {
      const leafHash = hashes.get(id);
      if (leafHash === undefined) return undefined;
      if (leaves.length < opts.max) leaves.push({ entryId: id, leafHash });
    }
    return leaves;
  }

  async function loop(): Promise<void> {
    do {
      again = false;
      if (opts.mayAppend && !opts.mayAppend()) return;
      const batchNo = ++started;
      const leaves = known();
      let result: BatchResult;
      try {
        if (leaves) {
          result = await integrateKnown(db, opts, tip!, leaves);
        } else {
          wantFull = false;
          result = await integrateBatch(db, opts);
        }
      } catch (err) {
        tip = undefined;
        if (err instanceof StaleTip) {
          // Another instance moved the log (or the clock or the key changed): read it again at once,
          // and for a while do only full batches, which take every instance's leaves.
          fullOnlyUntil = performance.now() + staleBackoffMs;
          again = true;
          continue;
        }
        if (!stopped) opts.onError?.(err);
        if (!stopped && waiters.size > 0 && !retry)
          retry = setTimeout(() => {
            retry = undefined;
            poke();
          }, pollMs);
        return;
      }
      tip = result.tip;
      const done = result.integrated;
      if (done.length > 0) opts.onBatch?.(done);
      for (const d of done) answer(d.entryId, true);
      if (leaves) {
        // A one-round-trip batch takes only the leaves it names: it answers nobody by elimination.
        if (waiters.size > 0) again = true;
        continue;
      }
      if (done.length >= opts.max) {
        again = true; // more may be pending: keep going before answering by elimination
        continue;
      }
      for (const [id, ws] of waiters) {
        const left = ws.filter((w) => w.fromBatch > batchNo);
        for (const w of ws) if (w.fromBatch <= batchNo) w.resolve(true);
        if (left.length === 0) forget(id);
        else waiters.set(id, left);
      }
    } while (again && !stopped);
  }

  function poke(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    // Started a microtask later: a transaction that committed several closings (a sweep pass) hands
    // its leaves over in consecutive after-commit hooks of one turn, and all of them then go in one
    // batch. Started at once, the batch took the first leaf alone and the rest waited for a second
    // batch (a pass of 60 waited 6.4 ms for integration instead of 4.3).
    running = Promise.resolve()
      .then(loop)
      .finally(() => {
        running = undefined;
        if (again && !stopped) poke();
      });
  }

  return {
    poke,
    settled(entries, waitMs = opts.waitMs) {
      if (entries.length === 0) return Promise.resolve(true);
      const entryIds = entries.map((e) => (typeof e === 'string' ? e : e.entryId));
      for (const e of entries) if (typeof e !== 'string') hashes.set(e.entryId, e.leafHash);
      if (stopped) return Promise.resolve(false);
      const mine: Array<[string, Waiter]> = [];
      const one = (id: string) =>
        new Promise<boolean>((resolve) => {
          // A batch already running may have taken its pending rows before this commit: only a
          // batch that starts from now on can answer by elimination.
          const w: Waiter = { fromBatch: started + 1, resolve };
          mine.push([id, w]);
          const list = waiters.get(id) ?? [];
          list.push(w);
          waiters.set(id, list);
        });
      const all = Promise.all(entryIds.map(one)).then((oks) => oks.every(Boolean));
      poke();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => {
          // Past the bound: forget this caller's waits (the leaves still integrate; nobody listens).
          for (const [id, w] of mine) {
            const left = (waiters.get(id) ?? []).filter((x) => x !== w);
            if (left.length === 0) forget(id);
            else waiters.set(id, left);
          }
          resolve(false);
        }, waitMs);
      });
      return Promise.race([all, bound]).finally(() => clearTimeout(timer));
    },
    async drain() {
      if (stopped) return;
      wantFull = true;
      poke();
      while (running) await running;
    },
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      while (running) await running;
      for (const id of [...waiters.keys()]) answer(id, false);
    },
  };
}
