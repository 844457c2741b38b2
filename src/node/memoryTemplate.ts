// A template for DATA_DIR=:memory: starts. Every :memory: start used to run initdb and the
// migrations in a child process (pgliteInit.ts): ~2–3 s of its ~4 s start. What that child leaves is
// the same for every start of one build, so the first :memory: start keeps a copy of it in
// TMPDIR/escrow-settlement-tpl-<key>, and later starts copy that instead of running the child.
//
// What makes a copy safe to reuse:
//   - It holds no secret and nothing of any sandbox: it is taken right after initdb and the
//     migrations, before the service opens the directory; the issuer and webhook keys are made by
//     ensureKeys afterwards, per start (a :memory: start still gets a fresh issuer key).
//   - <key> names what made it: the migrations (versions and SQL) and the PGlite build (a hash of
//     its pglite.wasm and pglite.data). Another build or another migration gets another template;
//     templates of other keys are removed when a new one is kept.
//   - Only a directory this user owns, not a symlink, not readable by others (0700 as created
//     here), holding the marker written last, is used; anything else is ignored and left alone.
//   - A copy is made with PG_VERSION last, and a copy that fails leaves nothing PGlite would take
//     for a database: the start then runs the child as before.
import { createHash } from 'node:crypto';
import {
  cpSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MIGRATIONS } from '../db/migrate.ts';
import { LOCK_FILE } from './dataDirLock.ts';
import { ownDirs } from './memoryDir.ts';
import { hasPgliteDb } from './pgliteInit.ts';

export const TEMPLATE_PREFIX = 'escrow-settlement-tpl-';
/** Written last into a template: the migration versions it holds. */
const MARKER = 'escrow-settlement-template.json';

/** PGlite's build files: beside the bundle (build.mjs copies them there), else in its package. */
function pgliteFiles(): string[] | undefined {
  const names = ['pglite.wasm', 'pglite.data'];
  const beside = names.map((n) => new URL(`./${n}`, import.meta.url));
  if (beside.every((u) => existsSync(u))) return beside.map((u) => fileURLToPath(u));
  try {
    const dist = new URL('./', import.meta.resolve('@electric-sql/pglite'));
    const inPackage = names.map((n) => new URL(n, dist));
    if (inPackage.every((u) => existsSync(u))) return inPackage.map((u) => fileURLToPath(u));
  } catch {
    // not resolvable: no template
  }
  return undefined;
}

let cachedKey: string | null | undefined;

/** The template's key for this build, or null when PGlite's files cannot be found (no template then). */
export function templateKey(): string | null {
  if (cachedKey !== undefined) return cachedKey;
  const files = pgliteFiles();
  if (!files) return (cachedKey = null);
  const h = createHash('sha256');
  for (const m of MIGRATIONS) h.update(`${m.version}\0${m.name}\0${m.sql}\0`);
  for (const f of files) h.update(readFileSync(f));
  return (cachedKey = h.digest('hex').slice(0, 24));
}

/** Whether `dir` may be used as this user's template: a real directory of ours, closed to others, complete. */
function usable(dir: string): number[] | undefined {
  try {
    const st = lstatSync(dir);
    const uid = process.getuid?.();
    if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0) return undefined;
    if (!hasPgliteDb(dir)) return undefined;
    const applied = JSON.parse(readFileSync(join(dir, MARKER), 'utf8')).migrationsApplied;
    return Array.isArray(applied) && applied.every((v) => Number.isInteger(v)) ? applied : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Fills the empty :memory: directory `dir` (it holds only DATA_DIR's lock) from this build's
 * template. Returns the migration versions the template applied, or undefined when there is no
 * usable template or the copy failed (then `dir` holds no database and the caller runs the child).
 */
export function fillFromTemplate(dir: string, base = tmpdir()): number[] | undefined {
  const key = templateKey();
  if (!key) return undefined;
  const tpl = join(base, TEMPLATE_PREFIX + key);
  const applied = usable(tpl);
  if (!applied) return undefined;
  try {
    cpSync(tpl, dir, { recursive: true, filter: (src) => src !== join(tpl, 'PG_VERSION') && src !== join(tpl, MARKER) });
    copyFileSync(join(tpl, 'PG_VERSION'), join(dir, 'PG_VERSION'));
    return applied;
  } catch {
    for (const name of readdirSync(dir)) if (name !== LOCK_FILE) rmSync(join(dir, name), { recursive: true, force: true });
    return undefined;
  }
}

/**
 * Keeps a copy of the freshly initialised (not yet opened) :memory: directory `dir` as this build's
 * template, unless one is there; removes this user's templates of other keys. Best effort: a
 * failure only means the next start runs the child again.
 */
export function keepAsTemplate(dir: string, applied: number[], base = tmpdir()): void {
  const key = templateKey();
  if (!key) return;
  const tpl = join(base, TEMPLATE_PREFIX + key);
  const staging = `${tpl}.${process.pid}.tmp`;
  try {
    if (!usable(tpl)) {
      rmSync(staging, { recursive: true, force: true });
      mkdirSync(staging, { mode: 0o700 });
      cpSync(dir, staging, { recursive: true, filter: (src) => src !== join(dir, LOCK_FILE) });
      writeFileSync(join(staging, MARKER), JSON.stringify({ migrationsApplied: applied }) + '\n');
      renameSync(staging, tpl); // fails if another start kept one meanwhile: theirs stays
    }
  } catch {
    // another start's template, or no room: fine
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  removeOtherTemplates(key, base);
}

/** Removes this user's templates (and stale staging copies) of keys other than `key`. */
function removeOtherTemplates(key: string, base: string): void {
  for (const { name, path, st } of ownDirs(base, TEMPLATE_PREFIX)) {
    if (name === TEMPLATE_PREFIX + key) continue;
    try {
      // A staging copy of this key belongs to a start in progress, unless it is old.
      if (name.startsWith(TEMPLATE_PREFIX + key) && Date.now() - st.mtimeMs < 60_000) continue;
      rmSync(path, { recursive: true, force: true });
    } catch {
      // not ours to remove
    }
  }
}
