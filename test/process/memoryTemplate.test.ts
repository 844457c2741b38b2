// The :memory: template (src/node/memoryTemplate.ts), in process: a directory initialised as the
// initialisation child does is kept as this build's template; a later fill copies it (PG_VERSION,
// the schema, no keys, the lock file of the new directory kept); a template that is not this user's
// own closed directory with its marker is never used; templates of other keys are removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initPgliteDir, openPglite } from '../../src/db/pglite.ts';
import { MIGRATIONS } from '../../src/db/migrate.ts';
import { LOCK_FILE } from '../../src/node/dataDirLock.ts';
import { fillFromTemplate, keepAsTemplate, TEMPLATE_PREFIX, templateKey } from '../../src/node/memoryTemplate.ts';

const templates = (base: string) => readdirSync(base).filter((n) => n.startsWith(TEMPLATE_PREFIX));

/** A fresh :memory: directory as start.ts makes it: empty but for DATA_DIR's lock. */
function memDir(base: string, name: string): string {
  const dir = join(base, name);
  mkdirSync(dir);
  writeFileSync(join(dir, LOCK_FILE), `${process.pid}\n`);
  return dir;
}

test('a kept template fills a new :memory: directory: schema migrated, no keys, its lock kept; unusable templates are ignored', {
  timeout: 120_000,
}, async () => {
  const base = mkdtempSync(join(tmpdir(), 'escrow-tpl-'));
  try {
    const key = templateKey();
    assert.match(key ?? '', /^[0-9a-f]{24}$/, "PGlite's files were found (the package under tsx)");
    // Another build's template, and an old staging copy: removed when this build keeps one.
    mkdirSync(join(base, `${TEMPLATE_PREFIX}0123456789abcdef01234567`), { mode: 0o700 });
    // Nothing kept yet: nothing to fill from.
    const first = memDir(base, 'first');
    assert.equal(fillFromTemplate(first, base), undefined);
    assert.deepEqual(readdirSync(first), [LOCK_FILE]);
    // What the initialisation child leaves, then kept.
    const applied = await initPgliteDir(first);
    keepAsTemplate(first, applied, base);
    assert.deepEqual(templates(base), [TEMPLATE_PREFIX + key]);
    const tpl = join(base, TEMPLATE_PREFIX + key);
    assert.ok(!existsSync(join(tpl, LOCK_FILE)), 'the lock of the directory it came from is not copied');

    const second = memDir(base, 'second');
    assert.deepEqual(fillFromTemplate(second, base), applied);
    assert.deepEqual(
      applied,
      MIGRATIONS.map((m) => m.version),
    );
    assert.equal(readFileSync(join(second, LOCK_FILE), 'utf8'), `${process.pid}\n`);
    assert.ok(existsSync(join(second, 'PG_VERSION')));
    const db = await openPglite(second);
    try {
      assert.deepEqual(await db.query('SELECT count(*)::int AS n FROM service_keys'), [{ n: 0 }], 'no key in a template');
      assert.deepEqual(await db.query('SELECT count(*)::int AS n FROM escrows'), [{ n: 0 }]);
    } finally {
      await db.close();
    }

    // Readable by others: not used (and not touched).
    chmodSync(tpl, 0o755);
    const third = memDir(base, 'third');
    assert.equal(fillFromTemplate(third, base), undefined);
    assert.deepEqual(readdirSync(third), [LOCK_FILE]);
    chmodSync(tpl, 0o700);
    // Without its marker (an interrupted keep): not used.
    const marker = join(tpl, 'escrow-settlement-template.json');
    const kept = readFileSync(marker);
    rmSync(marker);
    assert.equal(fillFromTemplate(third, base), undefined);
    writeFileSync(marker, kept);
    assert.deepEqual(fillFromTemplate(third, base), applied);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("a symlink in the template's place is never followed", { timeout: 60_000 }, () => {
  const base = mkdtempSync(join(tmpdir(), 'escrow-tpl-'));
  const elsewhere = mkdtempSync(join(tmpdir(), 'escrow-tpl-target-'));
  try {
    writeFileSync(join(elsewhere, 'PG_VERSION'), '17\n');
    writeFileSync(join(elsewhere, 'escrow-settlement-template.json'), JSON.stringify({ migrationsApplied: [1] }));
    chmodSync(elsewhere, 0o700);
    symlinkSync(elsewhere, join(base, TEMPLATE_PREFIX + templateKey()));
    const dir = memDir(base, 'mem');
    assert.equal(fillFromTemplate(dir, base), undefined);
    assert.deepEqual(readdirSync(dir), [LOCK_FILE]);
  } finally {
    rmSync(base, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  }
});
