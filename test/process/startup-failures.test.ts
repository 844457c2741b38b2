// Start-up failures of the real process (docs/design.md §6; docs/protocol.md §18.1): each is exactly one line on
// stderr naming the variable to fix, exit code 1, no stack trace, within 10 s. Timings are printed;
// they are noisy on a shared machine, the 10 s bound is what is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_URL } from '../harness.ts';
import { parseConfig } from '../../src/config.ts';
import { failsNaming, run, startService, TSX } from './proc.ts';

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A server that accepts connections and never says a word: a database host that hangs. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const s: Server = createServer((c) => sockets.add(c));
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    port: (s.address() as { port: number }).port,
    close: () =>
      new Promise<void>((r) => {
        for (const c of sockets) c.destroy();
        s.close(() => r());
      }),
  };
}

/** Starts the service with `env`; asserts the one-line failure naming `variable`, and returns how long it took. */

test('bad values, a bad DATA_DIR and a refused or silent DATABASE_URL each stop start-up with one line naming the variable', {
  timeout: 180_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-startup-'));
  const silent = await silentServer();
  try {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a directory');
    await failsNaming({ PORT: 'eighty', DATA_DIR: ':memory:' }, 'PORT', /must be a whole number/);
    await failsNaming({ PORT: '70000', DATA_DIR: ':memory:' }, 'PORT', /between 0 and 65535/);
    await failsNaming({ SWEEP_INTERVAL_MS: '-5', DATA_DIR: ':memory:' }, 'SWEEP_INTERVAL_MS');
    await failsNaming({ RATE_LIMIT_MAX: '1e3', DATA_DIR: ':memory:' }, 'RATE_LIMIT_MAX');
    await failsNaming({ DATA_DIR: '/proc' }, 'DATA_DIR', /cannot create files in \/proc/);
    await failsNaming({ DATA_DIR: file }, 'DATA_DIR', /is not a directory/);
    await failsNaming({ DATA_DIR: join(file, 'below') }, 'DATA_DIR', /is not a directory/);
    await failsNaming({ DATABASE_URL: 'mysql://db/escrow' }, 'DATABASE_URL');
    await failsNaming(
      { DATABASE_URL: `postgres://postgres:s3cret@127.0.0.1:${await closedPort()}/test` },
      'DATABASE_URL',
      /cannot reach Postgres at 127\.0\.0\.1:\d+\/test \(connection refused\)/,
    );
    // A Unix-socket URL (libpq's ?host=/dir) whose socket is not there: named as the socket.
    await failsNaming(
      { DATABASE_URL: `postgres://postgres@/test?host=${encodeURIComponent(dir)}` },
      'DATABASE_URL',
      /cannot reach Postgres at the socket \/.+\/\.s\.PGSQL\.5432 \(database test\) \(no such socket\)/,
    );
    const silentMs = await failsNaming(
      { DATABASE_URL: `postgres://postgres:s3cret@127.0.0.1:${silent.port}/test` },
      'DATABASE_URL',
      /no answer from Postgres at 127\.0\.0\.1:\d+\/test within 5 s/,
    );
    assert.ok(silentMs >= 5_000, 'waited for the deadline');
    if (PG_URL) {
      const u = new URL(PG_URL);
      u.pathname = '/no_such_database_here';
      await failsNaming(
        { DATABASE_URL: u.toString() },
        'DATABASE_URL',
        /refused the connection \(3D000: database "no_such_database_here" does not exist\)/,
      );
    }
  } finally {
    await silent.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no failure line ever shows the password of DATABASE_URL', async () => {
  const r = await run(TSX, { PORT: '0', DATABASE_URL: `postgres://postgres:hunter2-secret@127.0.0.1:${await closedPort()}/test` });
  assert.equal(r.code, 1);
  assert.doesNotMatch(r.stderr, /hunter2/);
});

test('a DATA_DIR the process cannot write to is named, as an unprivileged user', {
  skip: process.getuid?.() !== 0 && 'needs root to play another user',
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-ro-'));
  try {
    chmodSync(dir, 0o555);
    mkdirSync(join(dir, 'x'), { recursive: true }); // root can, nobody cannot: the directory exists, empty
    chmodSync(join(dir, 'x'), 0o555);
    // NODE_V8_COVERAGE off: under c8 the child would inherit a coverage directory it cannot write.
    const env = { HOME: '/tmp', NODE_V8_COVERAGE: '' };
    await failsNaming({ ...env, DATA_DIR: join(dir, 'x') }, 'DATA_DIR', /cannot create files in .*\(EACCES/, {
      uid: 65534,
      gid: 65534,
      cwd: '/tmp',
    });
    await failsNaming({ ...env, DATA_DIR: join(dir, 'new') }, 'DATA_DIR', /cannot create .*\(EACCES/, {
      uid: 65534,
      gid: 65534,
      cwd: '/tmp',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a port in use is reported at once, before the embedded database is opened', async () => {
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const port = (holder.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'escrow-port-'));
  try {
    // A fresh DATA_DIR: PGlite's first initialisation is what made this take 5.7 s.
    const ms = await failsNaming(
      { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: join(dir, 'data') },
      'PORT',
      new RegExp(`127\\.0\\.0\\.1:${port} is already in use`),
    );
    assert.ok(ms < 5_000, `port in use reported in ${ms} ms`);
    await failsNaming({ HOST: '203.0.113.7', SANDBOX_PUBLIC: '1', DATA_DIR: ':memory:' }, 'HOST', /is not an address of this machine/);
  } finally {
    holder.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an open sandbox refuses a non-loopback HOST unless SANDBOX_PUBLIC=1 says so on purpose', async () => {
  await failsNaming(
    { HOST: '0.0.0.0', DATA_DIR: ':memory:' },
    'HOST',
    /0\.0\.0\.0 is not a loopback address and API_KEY is not set.*SANDBOX_PUBLIC=1/,
  );
  await failsNaming({ HOST: '::', DATA_DIR: ':memory:' }, 'HOST', /not a loopback address/);
  await failsNaming({ HOST: '0.0.0.0', SANDBOX_PUBLIC: 'maybe', DATA_DIR: ':memory:' }, 'SANDBOX_PUBLIC');
  const s = await startService(TSX, { HOST: '0.0.0.0', SANDBOX_PUBLIC: '1', DATA_DIR: ':memory:' });
  assert.match(s.url, /^http:\/\/0\.0\.0\.0:\d+$/);
  const port = new URL(s.url).port;
  assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
  assert.equal(await s.stop(), 0, s.stderr());
});

test('the loopback and hosted cases need no SANDBOX_PUBLIC', () => {
  for (const HOST of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) assert.equal(parseConfig({ HOST }).host, HOST);
  assert.equal(parseConfig({ HOST: '0.0.0.0', API_KEY: 'k'.repeat(16) }).host, '0.0.0.0');
  assert.equal(parseConfig({ API_KEY: 'k'.repeat(16) }).host, '0.0.0.0', 'hosted mode binds every interface by default');
  assert.throws(() => parseConfig({ HOST: 'my-laptop.lan' }), /HOST: my-laptop\.lan is not a loopback address/);
});

// The rule for empty variables (README.md "Configuration"): an empty value is the same as no value.
const VARIABLES = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'DATA_DIR',
  'API_KEY',
  'SWEEP_INTERVAL_MS',
  'WEBHOOK_BACKOFF_MS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_ALLOW_PRIVATE',
  'RATE_LIMIT_WINDOW_MS',
  'RATE_LIMIT_MAX',
  'PUBLIC_RATE_LIMIT_MAX',
  'VERIFY_RATE_LIMIT_MAX',
  'REQUEST_LOG',
  'REQUEST_LOG_MAX_LINES',
  'TRUST_PROXY',
  'LOG_ORIGIN',
  'CUSTODY',
  'CHAIN_RPC_URL',
  'CHAIN_ACCOUNT',
  'CHAIN_CONFIRM_TIMEOUT_MS',
  'SANDBOX_PUBLIC',
];

test('an empty variable counts as unset, for every variable', () => {
  const empty = Object.fromEntries(VARIABLES.map((v) => [v, '']));
  assert.deepEqual(parseConfig(empty), parseConfig({}));
  for (const v of VARIABLES) assert.deepEqual(parseConfig({ [v]: '' }), parseConfig({}), v);
});

test('a started process with empty variables runs on the defaults', async () => {
  const s = await startService(TSX, { PORT: '0', HOST: '', API_KEY: '', SWEEP_INTERVAL_MS: '', TRUST_PROXY: '', DATA_DIR: ':memory:' });
  assert.match(s.stderr(), /"mode":"sandbox"/);
  assert.match(s.url, /^http:\/\/127\.0\.0\.1:/);
  assert.equal(await s.stop(), 0, s.stderr());
});
