// One process per DATA_DIR (docs/design.md §7). Embedded PGlite keeps its own view of the files in
// memory: two processes on one directory each write their own version, the transparency log forks,
// and a proof one returned later 404s on the other. A lock file holding the owner's pid, created
// with O_EXCL, keeps a second process out; a lock left by a process that died (SIGKILL, power loss)
// is taken over, because a dead pid holds nothing. The Deno edge (src/deno.ts) takes this same lock
// through Deno's node:fs and process, so neither edge opens a directory the other holds.
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';

export const LOCK_FILE = 'escrow-settlement.lock';

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file if it is still ours (shutdown, or a start-up that failed later). */
  release(): void;
}

/** Why a node:fs call failed, in words an operator reads (the code, then Node's text). */
const why = (err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  return e?.code ? `${e.code}: ${e.message.replace(/^\w+: /, '').replace(/, \w+ '.*'$/, '')}` : String(err);
};

/** Creates DATA_DIR when missing; ConfigError naming DATA_DIR when it cannot be a directory of ours. */
export function prepareDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw new ConfigError('DATA_DIR', `${dir} is not a directory`);
    throw new ConfigError('DATA_DIR', `cannot create ${dir} (${why(err)})`);
  }
  if (!statSync(dir).isDirectory()) throw new ConfigError('DATA_DIR', `${dir} is not a directory`);
}

/** True when a process with this pid exists (EPERM: it exists but is another user's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid a lock file names; undefined when it is unreadable or half-written. */
export function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Creates `path` exclusively with our pid in it; false when it already exists. */
function create(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** A half-written lock (no pid yet) younger than this belongs to a process still writing it. */
const FRESH_MS = 2_000;

/**
 * A lock whose holder is gone: our own pid (a container restarted with the same pid 1 as the
 * process that left it), a dead pid, or no pid at all after FRESH_MS.
 */
function stale(path: string, holder: number | undefined): boolean {
  if (holder === process.pid) return true;
  if (holder !== undefined) return !alive(holder);
  try {
    return Date.now() - statSync(path).mtimeMs > FRESH_MS;
  } catch {
    return true; // gone meanwhile: try again
  }
}

/**
 * Takes DATA_DIR for this process. Throws ConfigError naming DATA_DIR and the holder's pid when a
 * live process holds it, or why the directory is unusable (not writable, not a directory).
 */
export function lockDataDir(dir: string): DataDirLock {
  prepareDataDir(dir);
  const path = join(dir, LOCK_FILE);
  // Clearing a stale lock is done by one process at a time, under a second exclusive file, and
  // re-reads the holder under it: two processes finding the same stale lock cannot both remove
  // it (the second would otherwise remove the lock the first had just created).
  const takeover = `${path}.takeover`;
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      if (create(path)) return { path, release: () => releaseIfOurs(path) };
    } catch (err) {
      throw new ConfigError('DATA_DIR', `cannot create files in ${dir} (${why(err)})`);
    }
    const holder = holderOf(path);
    if (!stale(path, holder)) {
      if (holder === undefined) {
        sleepSync(50);
        continue;
      } // being written right now
      throw new ConfigError(
        'DATA_DIR',
        `${dir} is in use by another escrow-settlement process (pid ${holder}); one process per DATA_DIR (several instances share a DATABASE_URL instead)`,
      );
    }
    if (!create(takeover)) {
      if (stale(takeover, holderOf(takeover))) unlinkQuietly(takeover);
      sleepSync(20);
      continue;
    }
    try {
      if (holderOf(path) === holder && stale(path, holder)) unlinkQuietly(path);
    } finally {
      unlinkQuietly(takeover);
    }
  }
  throw new ConfigError('DATA_DIR', `could not take the lock ${path} (other processes keep contending for it)`);
}

function releaseIfOurs(path: string): void {
  if (holderOf(path) === process.pid) unlinkQuietly(path);
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone: what we wanted.
  }
}

/** Start-up only, a few ms at a time: blocking is fine before the server listens. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
