// The migrated PGlite store every test harness starts from: made once (initdb and the migrations, about
// 2 s of CPU), then each harness restores it (about 0.6 s) instead of running initdb again. The dump
// is kept in TMPDIR under a name made of what determines it (the migrations' versions and SQL, and the
// PGlite build), so the suite's parallel test processes share it and another build never takes it.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../src/db/migrate.ts';
import { migratedPgliteDump } from '../src/db/pglite.ts';

let dump: Promise<Blob> | undefined;

function dumpFile(): string {
  // The package does not export its package.json: read it beside its entry (dist/index.js).
  const pglite = JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('@electric-sql/pglite')), 'utf8'))
    .version as string;
  const h = createHash('sha256').update(`pglite ${pglite}\n`);
  for (const m of MIGRATIONS) h.update(`${m.version} ${m.name}\n${m.sql}\n`);
  return join(tmpdir(), `escrow-settlement-test-store-${h.digest('hex').slice(0, 16)}.tar`);
}

/** The migrated store's dump, from TMPDIR when a test process already made it. */
export function migratedDump(): Promise<Blob> {
  dump ??= (async () => {
    const file = dumpFile();
    if (existsSync(file)) return new Blob([readFileSync(file)]);
    const made = await migratedPgliteDump();
    // Written aside and renamed: a parallel test process reads a whole dump or none.
    const aside = `${file}.${process.pid}.tmp`;
    writeFileSync(aside, Buffer.from(await made.arrayBuffer()), { mode: 0o600 });
    renameSync(aside, file);
    return made;
  })();
  return dump;
}
