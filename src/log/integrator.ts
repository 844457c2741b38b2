// The in-process integrator: one loop per instance that runs integration batches (integrate.ts)
// while anything is pending, and lets a closing wait, bounded, until its leaf has an index.
//
// Woken three ways: by this instance's own closings right after they commit (poke), by a short poll
// while a closing still waits after a failed batch, and by the jobs' periodic tick (drain), which
// picks up leaves another instance committed and then died before integrating. Nothing notifies
// across instances: a waiter's own loop runs a batch, whose advisory lock waits for any batch in
// progress elsewhere; once granted, every leaf committed before is either in this batch or already
// integrated by that other batch, so a batch that was not full answers every waiter older than it.
import type { Db } from '../db/types.ts';
import { integrateBatch, type Integrated, type IntegrateOptions } from './integrate.ts';

export interface LogIntegrator {
  /** Asks for a batch soon (after a commit that sequenced leaves). */
  poke(): void;
  /**
   * Resolves true once every entry is integrated (by any instance), false if `waitMs` passes
   * first. Call it only after the transaction that sequenced the entries has committed.
   */
  settled(entryIds: string[], waitMs?: number): Promise<boolean>;
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
}

interface Waiter {
  /** The first batch number that can answer this waiter by elimination (started after it). */
  fromBatch: number;
  resolve: (ok: boolean) => void;
}

export function createIntegrator(db: Db, opts: IntegratorOptions): LogIntegrator {
  const pollMs = opts.pollMs ?? 10;
  const waiters = new Map<string, Waiter[]>();
  let started = 0;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const answer = (id: string, ok: boolean) => {
    for (const w of waiters.get(id) ?? []) w.resolve(ok);
    waiters.delete(id);
  };

  async function loop(): Promise<void> {
    do {
      again = false;
      const batchNo = ++started;
      let done: Integrated[];
      try {
        ({ integrated: done } = await integrateBatch(db, opts));
      } catch (err) {
        if (!stopped) opts.onError?.(err);
        if (!stopped && waiters.size > 0 && !retry) retry = setTimeout(() => { retry = undefined; poke(); }, pollMs);
        return;
      }
      if (done.length > 0) opts.onBatch?.(done);
      for (const d of done) answer(d.entryId, true);
      if (done.length >= opts.max) {
        again = true; // more may be pending: keep going before answering by elimination
        continue;
      }
      for (const [id, ws] of waiters) {
        const left = ws.filter((w) => w.fromBatch > batchNo);
        for (const w of ws) if (w.fromBatch <= batchNo) w.resolve(true);
        if (left.length === 0) waiters.delete(id);
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
    running = loop().finally(() => {
      running = undefined;
      if (again && !stopped) poke();
    });
  }

  return {
    poke,
    settled(entryIds, waitMs = opts.waitMs) {
      if (entryIds.length === 0) return Promise.resolve(true);
      if (stopped) return Promise.resolve(false);
      const mine: Array<[string, Waiter]> = [];
      const one = (id: string) => new Promise<boolean>((resolve) => {
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
            if (left.length === 0) waiters.delete(id);
            else waiters.set(id, left);
          }
          resolve(false);
        }, waitMs);
      });
      return Promise.race([all, bound]).finally(() => clearTimeout(timer));
    },
    async drain() {
      if (stopped) return;
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
