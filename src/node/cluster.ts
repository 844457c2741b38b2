// WORKERS=N > 1 (README "Operations"): one service instance as N node:cluster worker processes
// sharing the port, so an instance uses more than one core. Each worker runs the ordinary start-up
// (src/node/start.ts main(): its own pool, migrations under the advisory lock, sweep, integrator,
// webhook sender), exactly as N instances on one Postgres do. The primary only supervises:
//  - it prints the one `listening` line once every worker listens (workers report over IPC and log
//    `worker listening` instead), because supervisors and tests wait for that line;
//  - a worker that fails to start sends its one-line message to the primary, which prints the first
//    one only, kills the others and exits 1;
//  - a worker that dies later is logged (`worker exited`) and replaced, at most once a second per
//    slot; 5 crashes of one slot within 60 s stop everything with exit code 1;
//  - SIGTERM/SIGINT is forwarded to every worker as SIGTERM; each drains as a single process does;
//    exit 0 once all have exited, 1 if one had to be killed after 30 s.
// Under systemd (KillMode=control-group) the workers get SIGTERM directly too: a worker that stops
// cleanly (exit code 0) is not a crash.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Config } from '../config.ts';

/** The worker's slot (1..N), stable across restarts: names its request log file `<REQUEST_LOG>.w<k>`. */
export const SLOT_ENV = 'ESCROW_WORKER_SLOT';

/** Set for a worker forked to replace one that died: it binds the port only once it can serve. */
const REPLACEMENT_ENV = 'ESCROW_WORKER_REPLACEMENT';

const RESTART_GAP_MS = 1_000;
const CRASH_WINDOW_MS = 60_000;
const CRASHES_ALLOWED = 5;
const STOP_DEADLINE_MS = 30_000;
/** How long a worker's IPC message may trail its exit (both arrive from the same process). */
const MESSAGE_GRACE_MS = 250;

/** What a worker tells the primary. */
export type WorkerMessage = { escrow: 'listening'; fields: Record<string, unknown> } | { escrow: 'failed'; line: string };

function log(msg: string, fields: Record<string, unknown> = {}) {
  process.stderr.write(JSON.stringify({ at: new Date().toISOString(), msg, ...fields }) + '\n');
}

/** WORKERS resolved: `auto` is one worker per core the process may use (at most 64). */
export function resolveWorkers(workers: Config['workers']): number {
  return workers === 'auto' ? Math.min(64, Math.max(1, availableParallelism())) : workers;
}

/** In a worker forked by runPrimary: its slot; otherwise undefined (a single process, or the primary). */
export function workerSlot(env: Record<string, string | undefined>): number | undefined {
  if (!cluster.isWorker) return undefined;
  const k = Number(env[SLOT_ENV]);
  return Number.isInteger(k) && k >= 1 ? k : undefined;
}

export function isReplacement(env: Record<string, string | undefined>): boolean {
  return env[REPLACEMENT_ENV] === '1';
}

/** `<path>.w<k>`: several writers cannot share one file's rotation by line count. */
export function workerRequestLog(path: string, slot: number): string {
  return `${path}.w${slot}`;
}

/** Sends `msg` to the primary; resolves once it is written (or at once without a channel). */
export function tellPrimary(msg: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    try {
      process.send(msg, undefined, {}, () => resolve());
    } catch {
      resolve();
    }
  });
}

function isWorkerMessage(m: unknown): m is WorkerMessage {
  return typeof m === 'object' && m !== null && ((m as WorkerMessage).escrow === 'listening' || (m as WorkerMessage).escrow === 'failed');
}

function how(code: number | null, signal: string | null): string {
  return signal ? `signal ${signal}` : `code ${code}`;
}

interface Slot {
  k: number;
  worker?: Worker;
  pid?: number;
  listening?: Record<string, unknown>;
  lastFork: number;
  crashes: number[];
  restart?: ReturnType<typeof setTimeout>;
}

/** Runs the primary of an instance of `n` workers; `config` has been parsed (and was valid). */
export function runPrimary(n: number, config: Config): void {
  // starting: until every worker listens; running; stopping: SIGTERM forwarded, waiting for exits;
  // failing: a start-up failure or a crash loop, workers killed, exit 1 once they are gone.
  let phase: 'starting' | 'running' | 'stopping' | 'failing' = 'starting';
  let exitCode = 0;
  let stopTimer: ReturnType<typeof setTimeout> | undefined;
  const slots: Slot[] = Array.from({ length: n }, (_, i) => ({ k: i + 1, lastFork: 0, crashes: [] }));

  const live = () => slots.filter((s) => s.worker);

  function fork(slot: Slot) {
    slot.restart = undefined;
    slot.lastFork = Date.now();
    slot.listening = undefined;
    const w = cluster.fork({ [SLOT_ENV]: String(slot.k), ...(phase === 'running' ? { [REPLACEMENT_ENV]: '1' } : {}) });
    slot.worker = w;
    slot.pid = w.process.pid;
    w.on('message', (m: unknown) => {
      if (isWorkerMessage(m)) onMessage(slot, w, m);
    });
    w.on('exit', (code: number | null, signal: string | null) => onExit(slot, w, code, signal));
  }

  function onMessage(slot: Slot, w: Worker, m: WorkerMessage) {
    if (slot.worker !== w) return;
    if (m.escrow === 'failed') {
      if (phase === 'starting') return fail(m.line);
      // A replacement that cannot start: its reason, once; its exit counts as a crash of the slot.
      if (phase === 'running') process.stderr.write(m.line.endsWith('\n') ? m.line : `${m.line}\n`);
      return;
    }
    slot.listening = m.fields;
    if (phase !== 'starting' || slots.some((s) => !s.listening)) return;
    phase = 'running';
    const first = slots[0].listening!;
    log('listening', {
      url: first.url,
      workers: n,
      pid: process.pid,
      workerPids: slots.map((s) => s.pid),
      mode: first.mode,
      store: first.store,
      // Under the advisory lock one worker applies what is pending; the others find nothing to do.
      migrationsApplied: [
        ...new Set(
          slots.flatMap((s) => (Array.isArray(s.listening!.migrationsApplied) ? s.listening!.migrationsApplied : []) as unknown[]),
        ),
      ].sort((a, b) => Number(a) - Number(b)),
      requestLog: config.requestLog ? slots.map((s) => workerRequestLog(config.requestLog!, s.k)) : null,
    });
  }

  function onExit(slot: Slot, w: Worker, code: number | null, signal: string | null) {
    if (slot.worker !== w) return;
    slot.worker = undefined;
    if (phase === 'stopping' || phase === 'failing') {
      // Killed by our own SIGTERM before it could install its handler (it was still starting): fine.
      if (phase === 'stopping' && code !== 0 && signal !== 'SIGTERM') {
        log('worker exited while stopping', { slot: slot.k, pid: w.process.pid, code, signal });
        exitCode = 1;
      }
      return finishIfDone();
    }
    if (phase === 'starting') {
      slot.listening = undefined; // the instance is not up without it
      // Its one-line reason may still be on the way: give it a moment before naming the exit.
      setTimeout(() => {
        if (phase === 'starting')
          fail(
            `escrow-settlement: start-up failed: worker ${slot.k} (pid ${w.process.pid}) exited with ${how(code, signal)} before listening`,
          );
      }, MESSAGE_GRACE_MS);
      return;
    }
    // Running: a clean stop (exit code 0) is a worker that was sent SIGTERM on its own, not a crash.
    const now = Date.now();
    const clean = code === 0 && !signal;
    log(clean ? 'worker stopped' : 'worker exited', { slot: slot.k, pid: w.process.pid, code, signal });
    if (!clean) {
      slot.crashes = [...slot.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
      if (slot.crashes.length >= CRASHES_ALLOWED) {
        return fail(
          `escrow-settlement: worker ${slot.k} exited ${CRASHES_ALLOWED} times within ${CRASH_WINDOW_MS / 1000} s (last: pid ${w.process.pid}, ${how(code, signal)}); stopping all workers`,
        );
      }
    }
    // At most one restart per second per slot. After a clean stop wait at least that long too: under
    // systemd the primary's own SIGTERM may be just behind the worker's, and then nothing restarts.
    const wait = Math.max(clean ? RESTART_GAP_MS : 0, slot.lastFork + RESTART_GAP_MS - now);
    slot.restart = setTimeout(() => {
      if (phase === 'running') fork(slot);
    }, wait);
  }

  /** A start-up failure or a crash loop: print the one line, kill every worker, exit 1. */
  function fail(line: string) {
    if (phase === 'failing' || phase === 'stopping') return;
    phase = 'failing';
    exitCode = 1;
    process.stderr.write(line.endsWith('\n') ? line : `${line}\n`);
    for (const s of slots) clearTimeout(s.restart);
    for (const s of live()) s.worker!.process.kill('SIGKILL');
    finishIfDone();
  }

  function stop(signal: string) {
    if (phase === 'stopping' || phase === 'failing') return;
    phase = 'stopping';
    log('stopping', { signal, workers: live().map((s) => s.worker!.process.pid) });
    for (const s of slots) clearTimeout(s.restart);
    for (const s of live()) s.worker!.process.kill('SIGTERM');
    stopTimer = setTimeout(() => {
      for (const s of live()) {
        log('worker did not stop in time; killing it', { slot: s.k, pid: s.worker!.process.pid, afterMs: STOP_DEADLINE_MS });
        s.worker!.process.kill('SIGKILL');
      }
      exitCode = 1;
    }, STOP_DEADLINE_MS);
    finishIfDone();
  }

  function finishIfDone() {
    if (live().length > 0) return;
    clearTimeout(stopTimer);
    if (phase === 'stopping') log('stopped', { workers: n, code: exitCode });
    process.exit(exitCode);
  }

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  for (const slot of slots) fork(slot);
}
