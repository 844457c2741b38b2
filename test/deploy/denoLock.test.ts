// One process per DATA_DIR on every edge (docs/design.md §7): the Deno edge takes the Node edge's
// lock (src/node/dataDirLock.ts), so a second process of either edge on a directory the other holds
// exits at once with one line naming the holder's pid, and leaves the holder's lock and service alone.
// Also: the Deno edge starts and serves without a runtime warning (a negative timer delay printed a
// TimeoutNegativeWarning at every start).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_FILE } from '../../src/node/dataDirLock.ts';
import { spawn } from 'node:child_process';
import { DENO, NO_DENO, ROOT, startService, TSX, type Proc } from '../process/proc.ts';

const DENO_ARGS = ['run', '-A', '--quiet', 'src/deno.ts'];
const DENO_ENV = { DENO_NO_UPDATE_CHECK: '1' };
const startDeno = (env: Record<string, string>) => startService(DENO_ARGS, { ...DENO_ENV, ...env }, 90_000, ROOT, DENO);

const REFUSE_WITHIN_MS = 30_000;

/**
 * A start expected to be refused: its exit code and stderr; one still running after
 * REFUSE_WITHIN_MS started on the directory instead, and is killed (exit code null).
 */
function refusedStart(exec: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(exec, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n(still running after ${REFUSE_WITHIN_MS} ms: killed)`;
      child.kill('SIGKILL');
    }, REFUSE_WITHIN_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
const runDeno = (env: Record<string, string>) => refusedStart(DENO, DENO_ARGS, { ...DENO_ENV, ...env });
const runNode = (env: Record<string, string>) => refusedStart(process.execPath, TSX, env);

const REFUSAL = (dir: string, pid: number) =>
  `DATA_DIR: ${dir} is in use by another escrow-settlement process (pid ${pid}); one process per DATA_DIR (several instances share a DATABASE_URL instead)`;

/** A refused start: exit code 1, one line on stderr, naming DATA_DIR and the holder's pid. */
function assertRefused(r: { code: number | null; stderr: string }, dir: string, holder: number, edge: 'node' | 'deno'): void {
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(r.code, 1, r.stderr);
  assert.equal(lines.length, 1, `one line on stderr, got:\n${r.stderr}`);
  if (edge === 'node') assert.equal(lines[0], `escrow-settlement: bad configuration: ${REFUSAL(dir, holder)}`);
  else assert.equal(JSON.parse(lines[0]).msg, `bad configuration: ${REFUSAL(dir, holder)}`);
}

async function stillServes(p: Proc): Promise<void> {
  const r = await fetch(`${p.url}/health`);
  assert.equal(r.status, 200, await r.text());
}

test('a Deno process refuses a DATA_DIR a Node process holds, and a Node or Deno process one a Deno process holds; the holder goes on', {
  skip: NO_DENO,
  timeout: 240_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-lock-edges-'));
  const lock = join(dir, LOCK_FILE);
  let holder: Proc | undefined;
  try {
    // Node holds it: Deno is refused.
    holder = await startService(TSX, { DATA_DIR: dir });
    const nodePid = holder.child.pid!;
    assert.equal(readFileSync(lock, 'utf8').trim(), String(nodePid));
    assertRefused(await runDeno({ DATA_DIR: dir }), dir, nodePid, 'deno');
    assert.equal(readFileSync(lock, 'utf8').trim(), String(nodePid), 'the refused process left the lock alone');
    await stillServes(holder);
    assert.equal(await holder.stop(), 0, holder.stderr());
    assert.equal(existsSync(lock), false, 'a clean stop removes the lock');

    // Deno holds it (the store Node made): Node is refused, and so is a second Deno.
    holder = await startDeno({ DATA_DIR: dir });
    const denoPid = holder.child.pid!;
    assert.equal(readFileSync(lock, 'utf8').trim(), String(denoPid));
    assertRefused(await runNode({ DATA_DIR: dir }), dir, denoPid, 'node');
    assertRefused(await runDeno({ DATA_DIR: dir }), dir, denoPid, 'deno');
    assert.equal(readFileSync(lock, 'utf8').trim(), String(denoPid));
    await stillServes(holder);
    // The webhook sender has polled several times by now: no warning of any kind on the way.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.doesNotMatch(holder.stderr(), /Warning/, holder.stderr());
    assert.equal(await holder.stop(), 0, holder.stderr());
    assert.equal(existsSync(lock), false, 'the Deno edge removes its lock on a clean stop');

    // A SIGKILLed Deno holder leaves a lock naming a dead pid: the next start (Node) takes it over.
    holder = await startDeno({ DATA_DIR: dir });
    holder.child.kill('SIGKILL');
    await holder.exited;
    assert.ok(existsSync(lock));
    holder = await startService(TSX, { DATA_DIR: dir });
    assert.equal(readFileSync(lock, 'utf8').trim(), String(holder.child.pid));
    assert.equal(await holder.stop(), 0, holder.stderr());
  } finally {
    if (holder && holder.child.exitCode === null) holder.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
