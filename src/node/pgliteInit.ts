// Creating a PGlite data directory in a short-lived child process. initdb runs inside the process
// that creates a directory, and the WASM memory it grows is never given back to the OS: done in the
// service itself it left a fresh DATA_DIR's process at ~400 MB idle (VmHWM ~850 MB) against ~300 MB
// for a restart over an existing one. So when DATA_DIR holds no database yet, the service runs
// itself once more (same node, same flags, same entry file: tsx or the bundle) with INIT_ENV set;
// that child runs initdb and the migrations, exits, and its memory goes with it. The service then
// opens the directory as on a restart. The child takes no lock (the parent holds DATA_DIR's) and
// binds no port.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { initPgliteDir } from '../db/pglite.ts';

/** Set (to the directory) in the initialisation child's environment: run initDataDirChild, nothing else. */
export const INIT_ENV = 'ESCROW_SETTLEMENT_INIT_DATA_DIR';

/** PGlite's own test for "a database is here": initdb's PG_VERSION file at the directory's top. */
export function hasPgliteDb(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

/** Where the child builds the database before moving it into DATA_DIR (inside it: DATA_DIR's parent may not be writable). */
const STAGING = '.pglite-init';

/** How long the child may take (initdb is ~3 s on a busy 2-core machine). */
const INIT_DEADLINE_MS = 120_000;

/** Flags the child must not inherit: a debugger port already taken by the parent, or a wait for one. */
const isInspectFlag = (a: string) => /^--inspect(-brk|-wait|-port)?(=|$)/.test(a) || /^--debug-port(=|$)/.test(a);

/**
 * The child's side: create the database in a staging directory inside `dir`, migrate it, close it,
 * then move its files up into `dir` with PG_VERSION last, so an interrupted initialisation never
 * leaves a directory PGlite would take for a database. Prints the applied migration versions as one
 * JSON line on stdout; exits 0, or 1 with one line on stderr.
 */
export async function initDataDirChild(dir: string): Promise<void> {
  try {
    const staging = join(dir, STAGING);
    rmSync(staging, { recursive: true, force: true }); // left by an initialisation that was killed
    mkdirSync(staging, { recursive: true });
    const applied = await initPgliteDir(staging);
    const entries = readdirSync(staging).sort((a, b) => Number(a === 'PG_VERSION') - Number(b === 'PG_VERSION'));
    for (const name of entries) {
      // A half-finished earlier move (no PG_VERSION yet, so not a database): replace its leftovers.
      rmSync(join(dir, name), { recursive: true, force: true });
      renameSync(join(staging, name), join(dir, name));
    }
    rmSync(staging, { recursive: true, force: true });
    process.stdout.write(JSON.stringify({ migrationsApplied: applied }) + '\n');
    process.exit(0);
  } catch (err) {
    const msg = err instanceof Error ? err.message : typeof err === 'object' ? JSON.stringify(err) : String(err);
    process.stderr.write(msg.replace(/\s*\n\s*/g, ' ') + '\n');
    process.exit(1);
  }
}

/**
 * The service's side: runs the initialisation child on `dir` and resolves with the migration
 * versions it applied; rejects with the child's one-line reason (the caller names DATA_DIR).
 * Without an entry file to run again (node -e, a REPL) it resolves undefined: the caller then
 * opens the directory in process, as before.
 */
export function initDataDirInChild(dir: string): Promise<number[] | undefined> {
  const entry = process.argv[1];
  if (!entry) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv.filter((a) => !isInspectFlag(a)), entry], {
      env: { ...process.env, [INIT_ENV]: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), INIT_DEADLINE_MS);
    // The service exiting meanwhile (an uncaught error) takes the child with it.
    const orphan = () => child.kill('SIGKILL');
    process.once('exit', orphan);
    child.on('error', (e) => {
      clearTimeout(timer);
      process.removeListener('exit', orphan);
      reject(new Error(`cannot run ${process.execPath} (${e.message})`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      process.removeListener('exit', orphan);
      const last = err.trim().split('\n').filter(Boolean).pop();
      if (code === 0) {
        try {
          const { migrationsApplied } = JSON.parse(out.trim().split('\n').pop()!) as { migrationsApplied: number[] };
          return resolve(migrationsApplied);
        } catch {
          return reject(new Error(`the initialisation process printed no result${last ? `: ${last}` : ''}`));
        }
      }
      if (signal === 'SIGKILL' && !last)
        return reject(new Error(`the initialisation process did not finish within ${INIT_DEADLINE_MS / 1000} s`));
      reject(new Error(last ?? `the initialisation process ended with ${signal ?? `exit code ${code}`}`));
    });
  });
}
