// DATA_DIR=:memory: in the Node edge: a throwaway directory under os.tmpdir(), removed when the
// process ends. PGlite's own in-memory filesystem ('memory://') holds the whole database and initdb's
// WASM memory in the process (~400-680 MB idle, measured; ~318 MB even when loaded from a dump);
// a directory initialised by a child process (pgliteInit.ts) and opened like a restart is ~250 MB.
// The meaning for users is unchanged: nothing is kept. The directory holds DATA_DIR's lock file,
// which names the owner's pid: a directory left by a sandbox that was SIGKILLed (no exit handler
// ran) is removed by the next :memory: start once that pid is gone.
import { lstatSync, mkdtempSync, readdirSync, rmSync, type Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../errors.ts';
import { alive, holderOf, LOCK_FILE } from './dataDirLock.ts';

export const MEMORY_DIR_PREFIX = 'escrow-settlement-mem-';

/** A directory without a lock file younger than this is being set up by a process right now. */
const SETTING_UP_MS = 60_000;

/**
 * Removes this user's leftover :memory: directories whose owner is gone: the lock's pid is dead (or
 * is ours: a container restarted with the same pid), or there is no lock and the directory is older
 * than a minute. Others' directories, and any that cannot be removed, are left alone. Returns the
 * paths removed.
 */
export function sweepMemoryDirs(base = tmpdir()): string[] {
  const removed: string[] = [];
  for (const { path: dir, st } of ownDirs(base, MEMORY_DIR_PREFIX)) {
    try {
      const pid = holderOf(join(dir, LOCK_FILE));
      const gone = pid !== undefined ? pid === process.pid || !alive(pid) : Date.now() - st.mtimeMs > SETTING_UP_MS;
      if (!gone) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // Vanished meanwhile, or not ours to remove: leave it.
    }
  }
  return removed;
}

/**
 * This user's directories (not symlinks) directly under `base` whose names start with `prefix`;
 * what cannot be listed or read is left out.
 */
export function ownDirs(base: string, prefix: string): { name: string; path: string; st: Stats }[] {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return [];
  }
  const uid = process.getuid?.();
  const out: { name: string; path: string; st: Stats }[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const path = join(base, name);
    try {
      const st = lstatSync(path);
      if (st.isDirectory() && (uid === undefined || st.uid === uid)) out.push({ name, path, st });
    } catch {
      // vanished meanwhile
    }
  }
  return out;
}

/**
 * A new empty directory for this process's :memory: database, removed (with everything in it) when
 * the process exits by any path that runs exit handlers: a clean stop, a failed start.
 */
export function makeMemoryDir(): string {
  const base = tmpdir();
  let dir: string;
  try {
    dir = mkdtempSync(join(base, MEMORY_DIR_PREFIX));
  } catch (err) {
    throw new ConfigError(
      'DATA_DIR',
      `:memory: needs a temporary directory and none can be created in ${base} (${(err as NodeJS.ErrnoException).code ?? String(err)}; set TMPDIR to a writable directory)`,
    );
  }
  process.once('exit', () => removeMemoryDir(dir));
  return dir;
}

export function removeMemoryDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // Best effort: the next :memory: start sweeps what is left.
  }
}
