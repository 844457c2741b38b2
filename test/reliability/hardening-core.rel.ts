// Hardening of the core request path, against the real started service over real sockets: hostile
// strings and duplicate keys, methods (TRACE and CONNECT included), cross-site and DNS-rebinding
// requests, the clock's end, failed-auth budgets, tenancy and replayed signed actions; and an
// Idempotency-Key whose owner is SIGKILLed mid-request, which must be free at once, never in 60 s.
// Runs on embedded PGlite and, with TEST_DATABASE_URL, on Postgres.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConnection } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { PG_URL } from '../harness.ts';
import { clientKey, PASSING_TERMS } from '../fixtures.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { caller, counts, ok, pgSchema, rawRequest, report, sleep, type Call } from './lib.ts';

const ROOT = 'root-secret-hardening-core-0123456789';
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
const STORES = ['pglite', ...(PG_URL ? ['postgres'] : [])] as const;

async function service(
  store: string,
  env: Record<string, string>,
): Promise<{ proc: Proc; call: Call; done: () => Promise<void>; dbUrl?: string; schema?: string }> {
  const pg = store === 'postgres' ? await pgSchema('hardcore') : undefined;
  const proc = await startService(TSX, { DATA_DIR: ':memory:', ...(pg ? { DATABASE_URL: pg.url } : {}), ...env }, 90_000);
  counts.restarts++;
  return {
    proc,
    call: caller(proc.url),
    dbUrl: pg?.url,
    schema: pg?.schema,
    done: async () => {
      await proc.stop();
      await pg?.drop();
    },
  };
}

/** Sends raw bytes and returns the first response's status line and body (CONNECT cannot go through http.request). */
function rawExchange(url: string, bytes: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: u.hostname, port: Number(u.port) }, () => s.write(bytes));
    let out = '';
    s.on('data', (d) => (out += d));
    s.on('end', () => resolve(out));
    s.on('error', reject);
    setTimeout(() => {
      s.destroy();
      resolve(out);
    }, 5000);
  });
}

for (const store of STORES) {
  test(`[${store}] the open sandbox over the wire: input, methods, cross-site, Host and the clock's end`, async () => {
    const s = await service(store, {});
    try {
      const { call, proc } = s;
      const send = (method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
        counts.requests++;
        return rawRequest(proc.url, method, path, { body, headers });
      };
      // Input: NUL, a lone surrogate, a duplicate key, NUL in the path: 400 naming where.
      for (const [body, field] of [
        ['{"label":"a\\u0000"}', /^label must not contain the NUL/],
        ['{"label":"\\udc00"}', /^label must not contain a lone/],
        ['{"label":"a","label":"b"}', /^label appears twice/],
      ] as const) {
        const r = await send('POST', '/v1/agents', body);
        assert.equal(r.status, 400, r.text);
        assert.match(r.body.error.message, field);
      }
      assert.equal((await send('GET', '/v1/escrows/esc_%00')).status, 400);
      // Methods: 405 with Allow for every refused method, CONNECT included; OPTIONS 204; HEAD as GET.
      for (const m of ['TRACE', 'DELETE', 'PROPFIND', 'PUT']) {
        const r = await send(m, '/health');
        assert.equal(r.status, 405, `${m}: ${r.text}`);
        assert.equal(r.headers.allow, 'GET, HEAD, OPTIONS');
        assert.equal(r.body.error.code, 'method_not_allowed');
      }
      const connect = await rawExchange(proc.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      assert.match(connect, /^HTTP\/1\.1 405 /);
      assert.match(connect, /"code":"method_not_allowed"/);
      const options = await send('OPTIONS', '/v1/escrows');
      assert.equal(options.status, 204);
      assert.equal(options.headers.allow, 'GET, HEAD, POST, OPTIONS');
      const head = await send('HEAD', '/health');
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      // Cross-site: a text/plain POST from another origin is 403 and creates nothing.
      const before = (await ok(call, 'GET', '/v1/escrows')).escrows.length;
      const a = await ok(call, 'POST', '/v1/agents', {}, 201);
      const b = await ok(call, 'POST', '/v1/agents', {}, 201);
      const csrf = JSON.stringify({ amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: a.id, payeeAgentId: b.id });
      for (const headers of [
        { origin: 'https://evil.example', 'content-type': 'text/plain' },
        { 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
      ] as Array<Record<string, string>>) {
        const r = await send('POST', '/v1/escrows', csrf, headers);
        assert.equal(r.status, 403, r.text);
      }
      assert.equal((await ok(call, 'GET', '/v1/escrows')).escrows.length, before);
      // The README's curl -d session (no Origin, a form content type) still works.
      assert.equal((await send('POST', '/v1/escrows', csrf, { 'content-type': 'application/x-www-form-urlencoded' })).status, 201);
      // DNS rebinding: a name the sandbox does not know is 421, even with its matching Origin.
      const rebound = await send('POST', '/v1/escrows', csrf, {
        host: 'rebind.attacker.example',
        origin: 'http://rebind.attacker.example',
      });
      assert.equal(rebound.status, 421, rebound.text);
      assert.equal(rebound.body.error.code, 'misdirected_request');
      assert.equal((await send('GET', '/health', undefined, { host: `localhost:${new URL(proc.url).port}` })).status, 200);
      // The clock's end: advancing stops with 400 before year 9999, and creating still works there.
      let last = 200;
      for (let i = 0; i < 900 && last === 200; i++)
        last = (await call('POST', '/v1/sandbox/clock', { advanceSeconds: 315_360_000 })).status;
      assert.equal(last, 400);
      const clock = await ok(call, 'GET', '/v1/sandbox/clock');
      assert.ok(clock.now < '9989-01-04', clock.now);
      const e = await ok(call, 'POST', '/v1/escrows', JSON.parse(csrf), 201);
      const funded = await ok(call, 'POST', `/v1/escrows/${e.id}/fund`);
      assert.match(funded.deadlineAt, /^99\d\d-/);
    } finally {
      await s.done();
    }
    report(`hardening-core sandbox ${store}`);
  });

  test(`[${store}] hosted over the wire: authfail budget, tenancy, replayed signed evidence`, async () => {
    const s = await service(store, { API_KEY: ROOT, AUTH_FAIL_RATE_LIMIT_MAX: '3', PUBLIC_RATE_LIMIT_MAX: '1000' });
    try {
      const { call } = s;
      const root = (m: string, p: string, b?: unknown) => call(m, p, b, bearer(ROOT));
      // Failed auth spends authfail:<ip>; the public log budget and the root key are untouched.
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await call('GET', '/v1/escrows', undefined, bearer('wrong-key-0123456789abcdef'))).status);
      assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
      assert.equal((await call('GET', '/v1/log/head')).status, 200);
      assert.equal((await root('GET', '/v1/escrows')).status, 200);
      // Tenancy: a minted key's escrow is 404 to another minted key, listed only for its owner.
      const ka = (await root('POST', '/v1/admin/keys', { label: 'a' })).body.secret;
      const kb = (await root('POST', '/v1/admin/keys', { label: 'b' })).body.secret;
      const asA = (m: string, p: string, b?: unknown) => call(m, p, b, bearer(ka));
      const asB = (m: string, p: string, b?: unknown) => call(m, p, b, bearer(kb));
      const payer = clientKey();
      const payee = clientKey();
      const e = (
        await asA('POST', '/v1/escrows', {
          amount: '2',
          asset: 'USDC',
          terms: PASSING_TERMS,
          payer: { publicKey: payer.publicKey },
          payee: { publicKey: payee.publicKey },
        })
      ).body;
      assert.equal((await asB('GET', `/v1/escrows/${e.id}`)).status, 404);
      assert.equal((await asB('POST', `/v1/escrows/${e.id}/fund`)).status, 404);
      assert.deepEqual((await asB('GET', '/v1/escrows')).body.escrows, []);
      assert.equal((await asA('GET', '/v1/escrows')).body.escrows.length, 1);
      // Replay: signed evidence counts once.
      await asA('POST', `/v1/escrows/${e.id}/fund`);
      const submittedAt = new Date().toISOString();
      const payload = { no: 'title' };
      const d = await asA('POST', `/v1/escrows/${e.id}/delivery`, {
        payload,
        submittedAt,
        signature: {
          signer: payee.publicKey,
          signature: payee.sign({ escrowId: e.id, contentHash: sha256Hex(canonicalize(payload)), submittedAt }),
        },
      });
      assert.equal(d.status, 201, d.text);
      const signedAt = new Date().toISOString();
      const open = await asA('POST', `/v1/escrows/${e.id}/dispute`, {
        party: payer.publicKey,
        signedAt,
        signature: { signer: payer.publicKey, signature: payer.sign({ escrowId: e.id, action: 'dispute.open', signedAt }) },
      });
      assert.equal(open.status, 201, open.text);
      assert.ok(open.headers['x-service-now']);
      const ev = {
        party: payee.publicKey,
        note: 'n',
        signedAt,
        signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: e.id, action: 'dispute.evidence', note: 'n', signedAt }) },
      };
      const answers = await Promise.all([
        asA('POST', `/v1/escrows/${e.id}/dispute/evidence`, ev),
        asA('POST', `/v1/escrows/${e.id}/dispute/evidence`, ev),
      ]);
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409]);
      assert.equal(answers.find((r) => r.status === 409)!.body.error.code, 'replayed');
      assert.equal((await asA('GET', `/v1/escrows/${e.id}/dispute`)).body.evidence.length, 1);
    } finally {
      await s.done();
    }
    report(`hardening-core hosted ${store}`);
  });
}

test('[pglite] Idempotency-Keys of requests in flight when the process is SIGKILLed are free after restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-idem-kill-'));
  try {
    let proc = await startService(TSX, { DATA_DIR: dir }, 90_000);
    let call = caller(proc.url);
    const a = await ok(call, 'POST', '/v1/agents', {}, 201);
    const b = await ok(call, 'POST', '/v1/agents', {}, 201);
    const body = { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: a.id, payeeAgentId: b.id };
    const sent: string[] = [];
    let stop = false;
    const workers = [0, 1, 2, 3].map(async (w) => {
      for (let i = 0; !stop; i++) {
        const key = `w${w}-${i}`;
        sent.push(key);
        await call('POST', '/v1/escrows', body, { 'idempotency-key': key }).catch(() => undefined);
      }
    });
    await sleep(1500 + Math.random() * 1500);
    proc.child.kill('SIGKILL');
    await proc.exited;
    counts.kills++;
    stop = true;
    await Promise.all(workers);
    proc = await startService(TSX, { DATA_DIR: dir }, 90_000);
    counts.restarts++;
    call = caller(proc.url);
    // Every key answers at once, with one escrow per key; the last few were mid-request at the kill.
    const ids = new Set<string>();
    for (const key of sent.slice(-40)) {
      const r = await call('POST', '/v1/escrows', body, { 'idempotency-key': key });
      assert.equal(r.status, 201, `${key}: ${r.text}`);
      assert.ok(r.ms < 5000, `${key} took ${r.ms} ms`);
      ids.add(r.body.id);
    }
    assert.equal(ids.size, Math.min(40, sent.length));
    await proc.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  report('hardening-core idempotency kill pglite');
});

if (PG_URL) {
  test('[postgres] an Idempotency-Key whose owner is SIGKILLed mid-request is free for another instance at once', async () => {
    const pg = await pgSchema('idemkill');
    const env = { DATA_DIR: ':memory:', DATABASE_URL: pg.url };
    const first = await startService(TSX, env, 90_000);
    const second = await startService(TSX, env, 90_000);
    counts.restarts += 2;
    const db = openPostgres(PG_URL!, { schema: pg.schema, max: 2 });
    try {
      const call1 = caller(first.url);
      const call2 = caller(second.url);
      const a = await ok(call1, 'POST', '/v1/agents', {}, 201);
      const b = await ok(call1, 'POST', '/v1/agents', {}, 201);
      const e = await ok(
        call1,
        'POST',
        '/v1/escrows',
        { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: a.id, payeeAgentId: b.id },
        201,
      );
      // Hold the escrow's row lock, so the first instance's fund stops inside its transaction after
      // claiming the key; then kill that instance while it is there.
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = db.tx(async (tx) => {
        await tx.query('SELECT id FROM escrows WHERE id = $1 FOR UPDATE', [e.id]);
        locked();
        await held;
      });
      await isLocked;
      const key = { 'idempotency-key': `fund-${e.id}` };
      void call1('POST', `/v1/escrows/${e.id}/fund`, undefined, key).catch(() => undefined);
      for (let i = 0; i < 100; i++) {
        const waiting = await db.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted`);
        if (waiting.length > 0) break;
        await sleep(50);
      }
      first.child.kill('SIGKILL');
      await first.exited;
      counts.kills++;
      const started = Date.now();
      const retry = call2('POST', `/v1/escrows/${e.id}/fund`, undefined, key);
      await sleep(300);
      release();
      await holder;
      const r = await retry;
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.state, 'funded');
      assert.ok(Date.now() - started < 10_000, `the retry took ${Date.now() - started} ms`);
      const replay = await call2('POST', `/v1/escrows/${e.id}/fund`, undefined, key);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      const trail = (await ok(call2, 'GET', `/v1/escrows/${e.id}/trail`)).entries.map((t: any) => t.event);
      assert.deepEqual(trail, ['escrow.created', 'escrow.funded']);
    } finally {
      await db.close();
      await second.stop();
      await first.stop().catch(() => undefined);
      await pg.drop();
    }
    report('hardening-core idempotency kill postgres');
  });
}
