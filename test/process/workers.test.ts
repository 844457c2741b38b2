// WORKERS=N (README "Operations"): one instance as N node:cluster workers sharing the port. Real
// started processes: the primary prints one `listening` line once every worker listens, requests
// are served by several worker processes, a killed worker is replaced while the service keeps
// answering, SIGTERM drains every worker and exits 0, and a bad setting or a port in use is one
// line naming the variable, exit 1, printed once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_URL } from '../harness.ts';
import { Disconnected, Hang, pgSchema, rawRequest, sleep, type HttpRes } from '../reliability/lib.ts';
import { buildBundle, failsNaming, startService, TSX, type Proc } from './proc.ts';
import { availableParallelism } from 'node:os';
import { resolveWorkers } from '../../src/node/cluster.ts';

const NEEDS_PG = !PG_URL && 'needs TEST_DATABASE_URL';
const TERMS = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };

/** A request on a connection of its own (no keep-alive): the cluster hands each one to a worker. */
function fresh(base: string, method: string, path: string, body?: unknown): Promise<HttpRes> {
  return rawRequest(base, method, path, {
    body: body === undefined ? undefined : JSON.stringify(body),
    keepAlive: false,
    timeoutMs: 5_000,
  });
}

async function ok(base: string, method: string, path: string, body: unknown, status: number): Promise<any> {
  const r = await fresh(base, method, path, body);
  assert.equal(r.status, status, `${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.body;
}

/** The `worker listening` lines so far: slot and pid of each worker that came up. */
function workerLines(stderr: string): Array<{ slot: number; pid: number; at: string }> {
  return stderr
    .split('\n')
    .filter((l) => l.includes('"msg":"worker listening"'))
    .map((l) => JSON.parse(l));
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, cond: () => boolean, withinMs: number): Promise<void> {
  const started = Date.now();
  while (!cond()) {
    if (Date.now() - started > withinMs) assert.fail(`${what}: not within ${withinMs} ms`);
    await sleep(50);
  }
}

/** One create → fund → delivery lifecycle, each request on a fresh connection; returns the proof. */
async function lifecycle(base: string, n: number): Promise<any> {
  const payer = (await ok(base, 'POST', '/v1/agents', { label: `payer ${n}` }, 201)).id;
  const payee = (await ok(base, 'POST', '/v1/agents', { label: `payee ${n}` }, 201)).id;
  const escrow = await ok(
    base,
    'POST',
    '/v1/escrows',
    { amount: `${1 + n}.5`, asset: 'USDC', terms: TERMS, payerAgentId: payer, payeeAgentId: payee },
    201,
  );
  await ok(base, 'POST', `/v1/escrows/${escrow.id}/fund`, undefined, 200);
  const delivered = await ok(base, 'POST', `/v1/escrows/${escrow.id}/delivery`, { agentId: payee, payload: { title: 'done' } }, 201);
  assert.ok(delivered.proof, `escrow ${escrow.id} closed with a proof`);
  return delivered.proof;
}

function kill(s: Proc) {
  if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
}

/**
 * One WORKERS=2 instance on a fresh schema (with `requestLog`, its REQUEST_LOG in a temp dir): runs
 * fn, then kills whatever is still running and drops the schema and the dir.
 */
async function withCluster(
  schema: string,
  args: string[],
  opts: { requestLog?: boolean; env?: Record<string, string> },
  fn: (s: Proc, requestLog: string) => Promise<void>,
): Promise<void> {
  const pg = await pgSchema(schema);
  const dir = mkdtempSync(join(tmpdir(), 'escrow-workers-'));
  const requestLog = join(dir, 'requests.log');
  let s: Proc | undefined;
  try {
    s = await startService(args, {
      WORKERS: '2',
      DATABASE_URL: pg.url,
      ...(opts.requestLog ? { REQUEST_LOG: requestLog } : {}),
      ...opts.env,
    });
    await fn(s, requestLog);
  } finally {
    if (s) kill(s);
    rmSync(dir, { recursive: true, force: true });
    await pg.drop();
  }
}

test('WORKERS=2: one listening line, two worker processes of the primary serve requests, and the log stays consistent', {
  timeout: 120_000,
  skip: NEEDS_PG,
}, async () => {
  await withCluster('workers', TSX, { requestLog: true }, async (s, requestLog) => {
    const err = s.stderr();
    assert.equal(err.match(/"msg":"listening"/g)?.length, 1, `one listening line:\n${err}`);
    const listening = JSON.parse(err.split('\n').find((l) => l.includes('"msg":"listening"'))!);
    assert.equal(listening.workers, 2);
    assert.deepEqual(listening.requestLog, [`${requestLog}.w1`, `${requestLog}.w2`]);
    const workers = workerLines(err);
    assert.deepEqual(workers.map((w) => w.slot).sort(), [1, 2]);
    assert.equal(new Set(workers.map((w) => w.pid)).size, 2, 'two distinct worker pids');
    for (const w of workers) assert.equal(parentOf(w.pid), s.child.pid, `worker ${w.pid} is a child of the primary`);

    // Lifecycles in parallel, every request on a new connection: the cluster spreads them.
    const proofs = (
      await Promise.all(
        [0, 1, 2, 3].map(async (lane) => {
          const out = [];
          for (let i = 0; i < 5; i++) out.push(await lifecycle(s!.url, lane * 10 + i));
          return out;
        }),
      )
    ).flat();
    assert.equal(proofs.length, 20);
    const head = await ok(s.url, 'GET', '/v1/log/head', undefined, 200);
    assert.equal(head.logSize, 20, 'the log holds one leaf per closing');

    assert.equal(await s.stop('SIGTERM'), 0, s.stderr());
    for (const w of workers) assert.equal(alive(w.pid), false, `worker ${w.pid} is gone`);
    // Each worker wrote its own request log (flushed on stop): both of them served requests.
    assert.equal(existsSync(requestLog), false, 'no shared request log file');
    const served = [1, 2].map((k) => readFileSync(`${requestLog}.w${k}`, 'utf8').split('\n').filter(Boolean).length);
    assert.ok(
      served.every((n) => n > 0),
      `both workers served requests (request log lines per worker: ${served})`,
    );
    assert.equal(served[0] + served[1], 20 * 5 + 1, 'every request logged once');
    process.stdout.write(`# requests per worker: ${served.join(', ')}\n`);
  });
});

/**
 * A worker SIGKILLed under load, on the scheduling policy `policy` (NODE_CLUSTER_SCHED_POLICY; unset
 * is Node's round robin). Two lanes post on fresh connections throughout; what may fail is bounded
 * by what the killed worker held:
 *  - reset: a request on a connection the worker had accepted (at most one per lane);
 *  - unanswered: round robin only. The primary hands a connection to one worker at a time and closes
 *    its own copy when the worker acknowledges it; a connection handed over in the instant of the
 *    death (before the primary has seen the worker go) is never acknowledged, so the primary holds it
 *    open and the client waits for its own timeout. Node's cluster gives no way to reach that handle;
 *    at most one per killed worker (docs/design.md "WORKERS").
 */
async function killUnderLoad(policy: 'rr' | 'none') {
  const env: Record<string, string> = policy === 'none' ? { NODE_CLUSTER_SCHED_POLICY: 'none' } : {};
  await withCluster(`workers_kill_${policy}`, TSX, { requestLog: true, env }, async (s, requestLog) => {
    const [victim, survivor] = workerLines(s.stderr());
    let stop = false;
    const resets: string[] = [];
    const unanswered: string[] = [];
    const other: string[] = [];
    let answered = 0;
    const lanes = [0, 1].map(async () => {
      while (!stop) {
        try {
          const r = await fresh(s!.url, 'POST', '/v1/agents', { label: 'during' });
          if (r.status === 201) answered++;
          else other.push(`${r.status} ${r.text.slice(0, 200)}`);
        } catch (e) {
          (e instanceof Disconnected ? resets : e instanceof Hang ? unanswered : other).push(String(e));
        }
      }
    });
    await sleep(500);
    process.kill(victim.pid, 'SIGKILL');
    await until('worker exited logged', () => s!.stderr().includes('"msg":"worker exited"'), 10_000);
    await until('a replacement worker listens', () => workerLines(s!.stderr()).length === 3, 30_000);
    const before = answered;
    await until('requests answered after the replacement', () => answered > before + 20, 30_000);
    stop = true;
    await Promise.all(lanes);

    const exited = JSON.parse(
      s
        .stderr()
        .split('\n')
        .find((l) => l.includes('"msg":"worker exited"'))!,
    );
    assert.deepEqual([exited.slot, exited.pid, exited.code, exited.signal], [victim.slot, victim.pid, null, 'SIGKILL']);
    const replacement = workerLines(s.stderr())[2];
    assert.equal(replacement.slot, victim.slot, 'the replacement takes the slot of the killed worker');
    assert.notEqual(replacement.pid, victim.pid);
    assert.equal(parentOf(replacement.pid), s.child.pid);
    assert.equal(alive(survivor.pid), true, 'the other worker kept running');
    assert.deepEqual(other, [], 'no request answered with an error, none failed otherwise');
    assert.ok(resets.length <= 2, `at most one reset per lane (the killed worker's in-flight requests): ${resets.join(' | ')}`);
    assert.ok(
      unanswered.length <= (policy === 'rr' ? 1 : 0),
      `unanswered connections: at most the one handed over at the death, under round robin only: ${unanswered.join(' | ')}`,
    );
    assert.equal(s.stderr().match(/"msg":"listening"/g)?.length, 1, 'no second listening line');
    process.stdout.write(`# ${policy}: ${answered} answered, ${resets.length} reset, ${unanswered.length} unanswered around the kill\n`);
    assert.equal(await s.stop('SIGTERM'), 0, s.stderr());
    for (const w of [survivor, replacement]) assert.equal(alive(w.pid), false);
    // The replacement took its share of the port's connections (its lines follow the killed worker's in the slot's file).
    const upAt = Date.parse(replacement.at);
    const byReplacement = readFileSync(`${requestLog}.w${victim.slot}`, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((r) => Date.parse(r.at) >= upAt);
    assert.ok(byReplacement.length > 0, 'the replacement served requests');
  });
}

test(
  'a SIGKILLed worker is logged and replaced while the service keeps answering (round robin, the default)',
  {
    timeout: 120_000,
    skip: NEEDS_PG,
  },
  () => killUnderLoad('rr'),
);

test(
  'a SIGKILLed worker under NODE_CLUSTER_SCHED_POLICY=none: only its accepted connections fail, none is left unanswered',
  {
    timeout: 120_000,
    skip: NEEDS_PG,
  },
  () => killUnderLoad('none'),
);

test('SIGTERM to the primary lets an in-flight request finish in its worker, then every worker and the primary exit 0', {
  timeout: 60_000,
  skip: NEEDS_PG,
}, async () => {
  await withCluster('workers_term', TSX, {}, async (s) => {
    const workers = workerLines(s.stderr());
    // A slow request: a body that trickles in over ~800 ms.
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new TextEncoder().encode('{"label":'));
        await sleep(800);
        c.enqueue(new TextEncoder().encode('"late"}'));
        c.close();
      },
    });
    const pending = fetch(`${s.url}/v1/agents`, { method: 'POST', body, duplex: 'half' } as RequestInit);
    await sleep(300);
    s.child.kill('SIGTERM');
    const res = await pending;
    assert.equal(res.status, 201);
    assert.equal((await res.json()).label, 'late');
    assert.equal(await s.exited, 0, s.stderr());
    for (const w of workers) assert.equal(alive(w.pid), false, `worker ${w.pid} is gone`);
    assert.doesNotMatch(s.stderr(), /worker exited/, 'a stop is not a crash');
    assert.equal(s.stderr().match(/"msg":"stopped"/g)?.length, 3, 'two workers and the primary stopped');
  });
});

test('SIGTERM to the workers and the primary at once (systemd KillMode=control-group): no restart, no crash, exit 0', {
  timeout: 60_000,
  skip: NEEDS_PG,
}, async () => {
  await withCluster('workers_cgroup', TSX, {}, async (s) => {
    const workers = workerLines(s.stderr());
    for (const w of workers) process.kill(w.pid, 'SIGTERM');
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0, s.stderr());
    assert.doesNotMatch(s.stderr(), /worker exited/, 'not logged as a crash');
    assert.equal(workerLines(s.stderr()).length, 2, 'nothing was restarted');
  });
});

test('a worker that keeps dying (5 times within 60 s) stops the instance with one line and exit 1', {
  timeout: 90_000,
  skip: NEEDS_PG,
}, async () => {
  await withCluster('workers_loop', TSX, {}, async (s) => {
    for (let i = 0; i < 5; i++) {
      const slot1: Array<{ slot: number; pid: number; at: string }> = workerLines(s.stderr()).filter((w) => w.slot === 1);
      assert.equal(slot1.length, i + 1);
      process.kill(slot1[i].pid, 'SIGKILL');
      if (i < 4)
        await until(`replacement ${i + 1} of slot 1`, () => workerLines(s!.stderr()).filter((w) => w.slot === 1).length === i + 2, 30_000);
    }
    assert.equal(await s.exited, 1, s.stderr());
    assert.match(s.stderr(), /^escrow-settlement: worker 1 exited 5 times within 60 s .*; stopping all workers$/m);
    for (const w of workerLines(s.stderr())) assert.equal(alive(w.pid), false, `worker ${w.pid} is gone`);
  });
});

/** Runs the service to its exit; asserts exit 1 and exactly one stderr line, naming `variable`. */

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test('WORKERS=auto is one worker per core the process may use, at most 64', () => {
  assert.equal(resolveWorkers('auto'), Math.min(64, availableParallelism()));
  assert.equal(resolveWorkers(3), 3);
});

test('bad WORKERS values, and WORKERS > 1 without DATABASE_URL, are one line naming WORKERS', { timeout: 60_000 }, async () => {
  const db = `postgres://postgres@127.0.0.1:${await closedPort()}/none`;
  await failsNaming({ WORKERS: '2' }, 'WORKERS', /needs DATABASE_URL: the embedded PGlite lives in one process's memory/);
  await failsNaming({ WORKERS: 'auto', DATA_DIR: ':memory:' }, 'WORKERS', /needs DATABASE_URL/);
  await failsNaming({ WORKERS: '0', DATABASE_URL: db }, 'WORKERS', /from 1 to 64/);
  await failsNaming({ WORKERS: 'abc', DATABASE_URL: db }, 'WORKERS', /from 1 to 64, or auto/);
  await failsNaming({ WORKERS: '65', DATABASE_URL: db }, 'WORKERS', /got "65"/);
});

test('WORKERS=2: a port in use and an unreachable database are one line each, printed once, exit 1 within 10 s', {
  timeout: 60_000,
}, async () => {
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const port = (holder.address() as { port: number }).port;
  try {
    const db = `postgres://postgres@127.0.0.1:${await closedPort()}/none`;
    // The port is bound before the database is opened, so the unreachable database is not reached.
    const ms = await failsNaming(
      { WORKERS: '2', PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db },
      'PORT',
      new RegExp(`127\\.0\\.0\\.1:${port} is already in use`),
    );
    process.stdout.write(`# WORKERS=2, port in use: ${ms} ms\n`);
    await failsNaming({ WORKERS: '3', DATABASE_URL: db }, 'DATABASE_URL', /cannot reach Postgres/);
  } finally {
    holder.close();
  }
});

test('the bundle runs with WORKERS=2: one listening line, answers, stops with exit 0', { timeout: 120_000, skip: NEEDS_PG }, async () => {
  const bundle = await buildBundle();
  await withCluster('workers_bundle', [bundle], {}, async (s) => {
    assert.equal(s.stderr().match(/"msg":"listening"/g)?.length, 1);
    assert.equal(new Set(workerLines(s.stderr()).map((w) => w.pid)).size, 2);
    const h = await ok(s.url, 'GET', '/health', undefined, 200);
    assert.equal(h.ok, true);
    await lifecycle(s.url, 1);
    assert.equal(await s.stop(), 0, s.stderr());
  });
});
