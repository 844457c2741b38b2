// PGlite directories created by a child process, and DATA_DIR=:memory: on a throwaway directory
// (src/node/pgliteInit.ts, src/node/memoryDir.ts), with real started processes: a fresh DATA_DIR is
// initialised (initdb and migrations) by a short-lived child and the service opens it as on a
// restart; :memory: lives in TMPDIR/escrow-settlement-mem-* and is gone after a stop or a failed
// start; leftovers of dead sandboxes are swept, those of live ones are not; the bundle, run from a
// folder with no node_modules, does the same. Each test has its own TMPDIR: the sweep never meets
// another test's (or another checkout's) directories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_FILE } from '../../src/node/dataDirLock.ts';
import { MEMORY_DIR_PREFIX, sweepMemoryDirs } from '../../src/node/memoryDir.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { buildBundle, ROOT, run, startService, TSX, TSX_ANYWHERE } from './proc.ts';

/** A pid that belonged to a process that has exited (and was reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

const memDirs = (base: string) => readdirSync(base).filter((n) => n.startsWith(MEMORY_DIR_PREFIX));

/** The migrations the listening line says were applied. */
const appliedOf = (stderr: string) => JSON.parse(/"migrationsApplied":(\[[^\]]*\])/.exec(stderr)![1]) as number[];

/** The label of agent `id` in the PGlite directory `dir` (opened here, after the service stopped). */
async function labelIn(dir: string, id: string): Promise<string | undefined> {
  const db = await openPglite(dir);
  try {
    return (await db.query<{ label: string }>('SELECT label FROM agents WHERE id = $1', [id]))[0]?.label;
  } finally {
    await db.close();
  }
}

async function createAgent(url: string, label: string): Promise<string> {
  const res = await fetch(`${url}/v1/agents`, { method: 'POST', body: JSON.stringify({ label }) });
  assert.equal(res.status, 201);
  return (await res.json()).id;
}

test('a fresh DATA_DIR is created by a child process, serves, and a restart finds its data', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-init-'));
  try {
    const a = await startService(TSX, { DATA_DIR: dir });
    assert.ok(appliedOf(a.stderr()).length >= 9, 'the child applied every migration');
    assert.ok(existsSync(join(dir, 'PG_VERSION')));
    assert.ok(!existsSync(join(dir, '.pglite-init')), 'the staging directory is gone');
    const issuer = (await (await fetch(`${a.url}/health`)).json()).issuer;
    const id = await createAgent(a.url, 'kept');
    assert.equal(await a.stop(), 0, a.stderr());

    const b = await startService(TSX, { DATA_DIR: dir });
    assert.deepEqual(appliedOf(b.stderr()), []);
    assert.equal((await (await fetch(`${b.url}/health`)).json()).issuer, issuer, 'the same issuer key');
    assert.equal(await b.stop(), 0, b.stderr());
    assert.equal(await labelIn(dir, id), 'kept');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(':memory: runs in TMPDIR/escrow-settlement-mem-*, locked with its pid, and the directory is gone after SIGTERM', {
  timeout: 120_000,
}, async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-memtmp-'));
  try {
    const s = await startService(TSX, { DATA_DIR: ':memory:', TMPDIR: tmp });
    const [name] = memDirs(tmp);
    assert.ok(name, 'a directory under TMPDIR');
    assert.equal(readFileSync(join(tmp, name, LOCK_FILE), 'utf8').trim(), String(s.child.pid));
    assert.match(s.stderr(), /"store":"pglite \(memory\)"/);
    assert.match(s.stderr(), /"requestLog":null/);
    const gone = await createAgent(s.url, 'gone');
    const res = await fetch(`${s.url}/v1/escrows`, {
      method: 'POST',
      body: JSON.stringify({
        amount: '1',
        asset: 'USDC',
        payerAgentId: gone,
        payeeAgentId: await createAgent(s.url, 'payee'),
        terms: { description: 'x', checks: [] },
      }),
    });
    assert.equal(res.status, 201, await res.text());
    const issuer = (await (await fetch(`${s.url}/health`)).json()).issuer;
    assert.equal(await s.stop('SIGTERM'), 0, s.stderr());
    assert.deepEqual(memDirs(tmp), []);
    // What is kept is this build's template (memoryTemplate.ts): initdb and the migrations, no data.
    assert.equal(readdirSync(tmp).filter((n) => n.startsWith('escrow-settlement-tpl-')).length, 1, 'one template kept');

    // Nothing is kept: the next :memory: start (from the template) has a new issuer key, and none of the data.
    const t = await startService(TSX, { DATA_DIR: ':memory:', TMPDIR: tmp });
    assert.notEqual((await (await fetch(`${t.url}/health`)).json()).issuer, issuer);
    assert.deepEqual(appliedOf(t.stderr()), appliedOf(s.stderr()), 'the template applied every migration');
    const list = await (await fetch(`${t.url}/v1/escrows`)).json();
    assert.deepEqual(list.escrows, [], 'no escrow of the first sandbox');
    assert.equal(await t.stop('SIGINT'), 0, t.stderr());
    assert.deepEqual(memDirs(tmp), []);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a :memory: start removes leftovers whose pid is dead and keeps those of a live process', { timeout: 120_000 }, async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-memtmp-'));
  try {
    const dead = join(tmp, `${MEMORY_DIR_PREFIX}dead`);
    const live = join(tmp, `${MEMORY_DIR_PREFIX}live`);
    const other = join(tmp, 'escrow-settlement-other');
    for (const d of [dead, live, other]) mkdirSync(join(d, 'base'), { recursive: true });
    writeFileSync(join(dead, LOCK_FILE), `${deadPid()}\n`);
    writeFileSync(join(live, LOCK_FILE), `${process.pid}\n`);
    writeFileSync(join(other, LOCK_FILE), `${deadPid()}\n`);
    const s = await startService(TSX, { DATA_DIR: ':memory:', TMPDIR: tmp });
    assert.ok(!existsSync(dead), "the dead sandbox's directory was removed");
    assert.ok(existsSync(join(live, 'base')), "a live process's directory is kept");
    assert.ok(existsSync(other), 'only escrow-settlement-mem-* directories are swept');
    assert.equal(memDirs(tmp).length, 2, "the live one and this process's");
    assert.equal(await s.stop(), 0, s.stderr());
    assert.deepEqual(memDirs(tmp), [`${MEMORY_DIR_PREFIX}live`]);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('the sweep (in process): dead or own pid and old lock-less directories go; live pids, fresh lock-less ones, symlinks and other names stay', () => {
  const base = mkdtempSync(join(tmpdir(), 'escrow-sweep-'));
  try {
    const at = (n: string) => join(base, `${MEMORY_DIR_PREFIX}${n}`);
    for (const n of ['dead', 'own', 'live', 'old', 'fresh']) mkdirSync(join(at(n), 'base'), { recursive: true });
    writeFileSync(join(at('dead'), LOCK_FILE), `${deadPid()}\n`);
    writeFileSync(join(at('own'), LOCK_FILE), `${process.pid}\n`); // a restarted container's pid 1
    writeFileSync(join(at('live'), LOCK_FILE), `${process.ppid}\n`);
    const old = (Date.now() - 120_000) / 1000;
    utimesSync(at('old'), old, old);
    const target = mkdtempSync(join(tmpdir(), 'escrow-sweep-target-'));
    symlinkSync(target, at('link'));
    writeFileSync(at('file'), 'not a directory');
    mkdirSync(join(base, 'other-dead'));
    writeFileSync(join(base, 'other-dead', LOCK_FILE), `${deadPid()}\n`);
    const removed = sweepMemoryDirs(base).sort();
    assert.deepEqual(removed, [at('dead'), at('old'), at('own')]);
    assert.deepEqual(readdirSync(base).sort(), [
      `${MEMORY_DIR_PREFIX}file`,
      `${MEMORY_DIR_PREFIX}fresh`,
      `${MEMORY_DIR_PREFIX}link`,
      `${MEMORY_DIR_PREFIX}live`,
      'other-dead',
    ]);
    assert.ok(existsSync(target), "a symlink's target is never touched");
    rmSync(target, { recursive: true, force: true });
    assert.deepEqual(sweepMemoryDirs(join(base, 'missing')), [], 'no temporary directory: nothing to do');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('a :memory: start that fails (port in use) removes its directory and says so in one line', { timeout: 60_000 }, async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-memtmp-'));
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  try {
    const port = (busy.address() as { port: number }).port;
    const r = await run(TSX, { DATA_DIR: ':memory:', TMPDIR: tmp, HOST: '127.0.0.1', PORT: String(port) });
    assert.equal(r.code, 1);
    assert.match(r.stderr.trim(), /^escrow-settlement: bad configuration: PORT: .* already in use/);
    assert.deepEqual(memDirs(tmp), []);
  } finally {
    await new Promise<void>((r) => busy.close(() => r()));
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('an initialisation child that fails stops start-up with one line naming DATA_DIR', {
  skip: process.getuid?.() !== 0 && 'needs root to play another user',
  timeout: 60_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-initfail-'));
  try {
    // nobody may create the lock in DATA_DIR, but not clear the staging directory root left there.
    chmodSync(dir, 0o777);
    mkdirSync(join(dir, '.pglite-init', 'base'), { recursive: true });
    // NODE_V8_COVERAGE off: under c8 the child would inherit a coverage directory it cannot write.
    const r = await run(
      TSX_ANYWHERE,
      { HOME: '/tmp', NODE_V8_COVERAGE: '', PORT: '0', DATA_DIR: dir },
      { uid: 65534, gid: 65534, cwd: '/tmp' },
    );
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.equal(r.code, 1, r.stderr);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0],
      new RegExp(`^escrow-settlement: bad configuration: DATA_DIR: cannot create the embedded database in ${dir} \\(.*EACCES`),
    );
    assert.ok(!existsSync(join(dir, 'PG_VERSION')));
    assert.ok(!existsSync(join(dir, LOCK_FILE)), 'the lock was released');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the bundle, run from a folder without node_modules, creates a fresh DATA_DIR in a child and runs :memory:', {
  timeout: 180_000,
}, async () => {
  await buildBundle();
  const app = mkdtempSync(join(tmpdir(), 'escrow-bundle-'));
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-memtmp-'));
  try {
    for (const f of ['escrow-settlement.mjs', 'pglite.wasm', 'pglite.data', 'initdb.wasm'])
      copyFileSync(join(ROOT, 'dist', f), join(app, f));
    const dataDir = join(app, 'data');
    const a = await startService(['escrow-settlement.mjs'], { DATA_DIR: dataDir }, 90_000, app);
    assert.ok(appliedOf(a.stderr()).length >= 9);
    const id = await createAgent(a.url, 'bundled');
    assert.equal(await a.stop(), 0, a.stderr());
    const b = await startService(['escrow-settlement.mjs'], { DATA_DIR: dataDir }, 90_000, app);
    assert.deepEqual(appliedOf(b.stderr()), []);
    assert.equal(await b.stop(), 0, b.stderr());
    assert.equal(await labelIn(dataDir, id), 'bundled');

    const m = await startService(['escrow-settlement.mjs'], { DATA_DIR: ':memory:', TMPDIR: tmp }, 90_000, app);
    assert.equal(memDirs(tmp).length, 1);
    assert.equal((await (await fetch(`${m.url}/health`)).json()).ok, true);
    assert.equal(await m.stop(), 0, m.stderr());
    assert.deepEqual(memDirs(tmp), []);
  } finally {
    rmSync(app, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
});
