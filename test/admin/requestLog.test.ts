// The request log file: JSON lines, rotation to <path>.1, counters; and the real process writing it (README.md "Configuration", REQUEST_LOG).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RequestLogRecord } from '../../src/app.ts';
import { openRequestLog } from '../../src/node/requestLog.ts';
import { startService, TSX } from '../process/proc.ts';
import { ROOT } from './helpers.ts';

const rec = (n: number): RequestLogRecord => ({
  at: new Date(0).toISOString(),
  requestId: `r${n}`,
  method: 'GET',
  route: '/health',
  status: 200,
  durationMs: 1,
  keyId: null,
  ip: '127.0.0.1',
});

const lines = (path: string) =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

function tempDir(): { dir: string; [Symbol.dispose](): void } {
  const dir = mkdtempSync(join(tmpdir(), 'reqlog-'));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

test('the writer appends one JSON line per record and creates missing directories', async () => {
  using t = tempDir();
  const path = join(t.dir, 'nested', 'deeper', 'requests.log');
  const log = openRequestLog(path, 100);
  for (let i = 1; i <= 3; i++) log.write(rec(i));
  assert.deepEqual(log.stats(), { lines: 3, rotations: 0 });
  await log.close();
  assert.deepEqual(
    lines(path).map((r) => r.requestId),
    ['r1', 'r2', 'r3'],
  );
  assert.deepEqual(lines(path)[0], rec(1));
});

test('gathered lines reach the file without a close, soon after they are written', async () => {
  using t = tempDir();
  const path = join(t.dir, 'requests.log');
  const log = openRequestLog(path, 100);
  log.write(rec(1));
  log.write(rec(2));
  const deadline = Date.now() + 5_000;
  while (lines(path).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(
    lines(path).map((r) => r.requestId),
    ['r1', 'r2'],
  );
  await log.close();
});

test('the writer rotates to <path>.1 once the file holds the maximum, keeping one old file', async () => {
  using t = tempDir();
  const path = join(t.dir, 'requests.log');
  const log = openRequestLog(path, 3);
  const seen: Array<{ lines: number; rotations: number }> = [];
  for (let i = 1; i <= 7; i++) {
    log.write(rec(i));
    seen.push(log.stats());
  }
  await log.close();
  assert.deepEqual(
    seen.map((s) => [s.lines, s.rotations]),
    [
      [1, 0],
      [2, 0],
      [3, 0],
      [1, 1],
      [2, 1],
      [3, 1],
      [1, 2],
    ],
  );
  assert.deepEqual(
    lines(`${path}.1`).map((r) => r.requestId),
    ['r4', 'r5', 'r6'],
  );
  assert.deepEqual(
    lines(path).map((r) => r.requestId),
    ['r7'],
  );
  assert.ok(!existsSync(`${path}.2`));
});

test('a restart keeps counting the lines already in the file towards the next rotation', async () => {
  using t = tempDir();
  const path = join(t.dir, 'requests.log');
  writeFileSync(path, `${JSON.stringify(rec(1))}\n${JSON.stringify(rec(2))}\n`);
  const log = openRequestLog(path, 3);
  assert.deepEqual(log.stats(), { lines: 2, rotations: 0 });
  log.write(rec(3));
  log.write(rec(4));
  assert.deepEqual(log.stats(), { lines: 1, rotations: 1 });
  await log.close();
  assert.deepEqual(
    lines(`${path}.1`).map((r) => r.requestId),
    ['r1', 'r2', 'r3'],
  );
});

test('a log that cannot be written reports the failure once and never throws', async () => {
  using t = tempDir();
  const errors: unknown[] = [];
  const log = openRequestLog(t.dir, 10, (e) => errors.push(e)); // a directory is not a writable file
  log.write(rec(1));
  log.write(rec(2));
  await log.close();
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /EISDIR/);
});

test('the service writes the request log, rotates it, counts it in metrics, and never logs a secret', async () => {
  using t = tempDir();
  const path = join(t.dir, 'requests.log');
  const s = await startService(TSX, { DATA_DIR: ':memory:', API_KEY: ROOT, REQUEST_LOG: path, REQUEST_LOG_MAX_LINES: '4' });
  let metrics: any;
  let secret = '';
  try {
    const call = (p: string, init: RequestInit = {}, key = ROOT) =>
      fetch(`${s.url}${p}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) } });
    const minted = await (await call('/v1/admin/keys', { method: 'POST', body: '{"label":"proc"}' })).json();
    secret = minted.secret;
    assert.match(secret, /^esk_/);
    const listed = await call('/v1/escrows', {}, secret);
    assert.equal(listed.status, 200);
    // Over real HTTP too, the answer tells the budget it spent.
    assert.equal(listed.headers.get('ratelimit-limit'), '1200');
    assert.equal(listed.headers.get('ratelimit-remaining'), '1199');
    assert.equal((await call(`/v1/escrows/esc_01hzzzzzzzzzzzzzzzzzzzzzzz`, {}, secret)).status, 404);
    assert.equal((await call('/v1/agents', { method: 'POST', body: '{"label":"secret-body"}' }, secret)).status, 201);
    assert.equal((await call('/v1/escrows', {}, 'esk_not-a-real-one')).status, 401);
    assert.equal((await call('/v1/admin/keys')).status, 200);
    metrics = await (await call('/v1/admin/metrics')).json();
  } finally {
    assert.equal(await s.stop('SIGTERM'), 0, s.stderr());
  }
  // Seven requests with a maximum of four lines: one rotation; the metrics request saw six written.
  assert.deepEqual(metrics.requestLog, { lines: 2, rotations: 1 });
  const all = [...lines(`${path}.1`), ...lines(path)];
  assert.equal(lines(`${path}.1`).length, 4);
  assert.deepEqual(
    all.map((r) => [r.method, r.route, r.status]),
    [
      ['POST', '/v1/admin/keys', 201],
      ['GET', '/v1/escrows', 200],
      ['GET', '/v1/escrows/:id', 404],
      ['POST', '/v1/agents', 201],
      ['GET', '/v1/escrows', 401],
      ['GET', '/v1/admin/keys', 200],
      ['GET', '/v1/admin/metrics', 200],
    ],
  );
  const minted = all[1].keyId;
  assert.match(minted, /^key_/);
  assert.deepEqual(
    all.map((r) => r.keyId),
    ['root', minted, minted, minted, null, 'root', 'root'],
  );
  for (const r of all) {
    assert.deepEqual(Object.keys(r).sort(), ['at', 'durationMs', 'ip', 'keyId', 'method', 'requestId', 'route', 'status']);
    assert.equal(r.ip, '127.0.0.1');
    assert.ok(typeof r.requestId === 'string' && r.requestId.length > 0);
  }
  const text = readFileSync(`${path}.1`, 'utf8') + readFileSync(path, 'utf8');
  for (const banned of [secret, ROOT, 'esk_not-a-real-one', 'secret-body', 'Bearer', 'authorization'])
    assert.ok(!text.includes(banned), banned);
});
