// One process per DATA_DIR (docs/design.md §7), with real started processes: a second process on a
// directory in use exits at once with one line naming DATA_DIR and the holder's pid; the lock of a
// process that died (SIGKILL) is taken over; a clean stop removes it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_FILE, lockDataDir } from '../../src/node/dataDirLock.ts';
import { run, startService, TSX } from './proc.ts';

/** A pid that belonged to a process that has exited (and was reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test("a second process on a DATA_DIR in use exits at once naming DATA_DIR and the holder; a SIGKILLed holder's lock is taken over", {
  timeout: 120_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-lock-'));
  try {
    const first = await startService(TSX, { DATA_DIR: dir });
    const lock = join(dir, LOCK_FILE);
    assert.equal(readFileSync(lock, 'utf8').trim(), String(first.child.pid));
    const issuer = await (await fetch(`${first.url}/.well-known/proof-issuer.json`)).json();

    const started = performance.now();
    const second = await run(TSX, { PORT: '0', DATA_DIR: dir });
    const ms = Math.round(performance.now() - started);
    const lines = second.stderr.trim().split('\n');
    assert.equal(second.code, 1);
    assert.equal(lines.length, 1, second.stderr);
    assert.equal(
      lines[0],
      `escrow-settlement: bad configuration: DATA_DIR: ${dir} is in use by another escrow-settlement process (pid ${first.child.pid}); one process per DATA_DIR (several instances share a DATABASE_URL instead)`,
    );
    assert.ok(ms < 10_000, `refused in ${ms} ms`);
    process.stdout.write(`# second process refused in ${ms} ms (noisy: shared CPU)\n`);
    assert.equal(readFileSync(lock, 'utf8').trim(), String(first.child.pid), 'the refused process left the lock alone');
    assert.equal((await fetch(`${first.url}/health`)).status, 200, 'the first process still serves');

    // SIGKILL: no clean-up runs, the lock stays behind naming a dead pid; the next start takes it over.
    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(existsSync(lock));
    const third = await startService(TSX, { DATA_DIR: dir });
    assert.equal(readFileSync(lock, 'utf8').trim(), String(third.child.pid));
    assert.deepEqual(
      await (await fetch(`${third.url}/.well-known/proof-issuer.json`)).json(),
      issuer,
      'the same store, the same issuer key',
    );
    assert.equal(await third.stop(), 0, third.stderr());
    assert.equal(existsSync(lock), false, 'a clean stop removes the lock');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("stale locks: a dead pid, a garbled file left long ago, and our own pid (a restarted container's pid 1) are taken over", () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-lock-'));
  const lock = join(dir, LOCK_FILE);
  try {
    for (const stale of [`${deadPid()}\n`, String(process.pid)]) {
      writeFileSync(lock, stale);
      const l = lockDataDir(dir);
      assert.equal(readFileSync(lock, 'utf8').trim(), String(process.pid));
      l.release();
      assert.equal(existsSync(lock), false);
    }
    writeFileSync(lock, 'garbage');
    const old = new Date(Date.now() - 60_000);
    // A minute old: no process is still writing it.
    utimesSync(lock, old, old);
    lockDataDir(dir).release();
    assert.equal(existsSync(lock), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a live holder is named and its lock left in place; release() never removes another process's lock", () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-lock-'));
  const lock = join(dir, LOCK_FILE);
  try {
    const holder = process.ppid; // alive for as long as this test runs
    writeFileSync(lock, `${holder}\n`);
    assert.throws(
      () => lockDataDir(dir),
      new RegExp(`^ConfigError: DATA_DIR: ${dir} is in use by another escrow-settlement process \\(pid ${holder}\\)`),
    );
    assert.equal(readFileSync(lock, 'utf8').trim(), String(holder));
    rmSync(lock);
    const mine = lockDataDir(dir);
    writeFileSync(lock, `${holder}\n`); // someone replaced it (by hand): not ours to remove
    mine.release();
    assert.equal(readFileSync(lock, 'utf8').trim(), String(holder));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
