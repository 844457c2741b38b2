// Auth and object access on a hosted deployment (API_KEY set): a minted key reaches nothing admin
// by any path, method or header trick; a revoked key fails on the very next request (on the other
// instance, with Postgres); no response, request log line or log message carries a secret; webhook
// targets cannot reach private addresses, at registration or at delivery (DNS rebinding included).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LookupAddress } from 'node:dns';
import { openStore, requester, STORES, type Harness, type StoreKind } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { fillPath } from '../admin/helpers.ts';
import { receiver } from '../webhooks/helpers.ts';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { parseConfig } from '../../src/config.ts';
import { createApp, type AppDeps } from '../../src/app.ts';
import type { Db } from '../../src/db/types.ts';
import { sendDueOnce } from '../../src/jobs/webhooks.ts';
import { createNodeTransport, type LookupAll } from '../../src/node/webhookTransport.ts';
import { fetchTransport } from '../../src/webhooks/transport.ts';
import { caller, counts, ok, report } from './lib.ts';

const ROOT = 'root-secret-reliability-auth-0123456789';
const LIMITS = {
  PUBLIC_RATE_LIMIT_MAX: '1000000000',
  VERIFY_RATE_LIMIT_MAX: '1000000000',
  RATE_LIMIT_MAX: '1000000000',
  AUTH_FAIL_RATE_LIMIT_MAX: '1000000000',
};
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });

/** Every response seen, for the secret scan (mint answers, which show the secret once, excepted). */
const seen: string[] = [];

function harness(kind: StoreKind, db: Db, env: Record<string, string>, deps: Partial<AppDeps> = {}): Harness {
  const config = parseConfig({ DATA_DIR: ':memory:', ...LIMITS, ...env });
  const app = createApp({ db, config, ...deps });
  return {
    kind,
    app,
    db,
    config,
    req: requester(app, (method, path, res, text) => {
      counts.requests++;
      if (!(method === 'POST' && path === '/v1/admin/keys' && res.status === 201))
        seen.push(`${method} ${path} ${res.status} ${JSON.stringify([...res.headers])} ${text}`);
    }),
    close: async () => {},
  };
}

const fakeDns = (answers: Record<string, string[]>) => ({
  resolveHost: async (host: string) => {
    const a = answers[host];
    if (!a) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return a;
  },
  lookupAll: ((hostname, _options, cb) => {
    const a = answers[hostname];
    if (!a) return cb(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    cb(
      null,
      a.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  }) as LookupAll,
});

for (const kind of STORES) {
  describe(`auth and object access, hosted [${kind}]`, () => {
    let a: Harness;
    let b: Harness;
    let close: () => Promise<void>;
    const secrets: string[] = [ROOT];
    const mint = async (label = 'k') => {
      const r = await a.req('POST', '/v1/admin/keys', { label }, bearer(ROOT));
      assert.equal(r.status, 201, r.text);
      secrets.push(r.body.secret);
      return r.body as { id: string; secret: string };
    };

    before(async () => {
      seen.length = 0;
      const schema = `rel_auth_${process.pid}_${Date.now().toString(36)}`;
      const s1 = await openStore(kind, { schema });
      const s2 = kind === 'postgres' ? await openStore(kind, { schema }) : s1;
      a = harness(kind, s1.db, { API_KEY: ROOT });
      b = harness(kind, s2.db, { API_KEY: ROOT });
      close = async () => {
        if (s2 !== s1) await s2.db.close();
        await s1.drop();
      };
    });
    after(async () => {
      report(`auth and object access [${kind}]`);
      await close();
    });

    test('a minted key reaches nothing admin: every root route, method, path spelling and routing header', async () => {
      const k = await mint('walker');
      const issuersBefore = (await a.req('GET', '/.well-known/proof-issuer.json')).body.keys.length;
      const keysBefore = (await a.req('GET', '/v1/admin/keys', undefined, bearer(ROOT))).body.keys.length;
      const roots = a.app.routes.filter((d) => d.access === 'root');
      assert.ok(roots.length >= 6);
      const spellings = (p: string) => [
        p,
        `${p}/`,
        p.replace('/v1/', '/v1//'),
        p.toUpperCase(),
        p.replace('/admin/', '/ADMIN/'),
        p.replace('/admin/', '/admin%2F'),
        p.replace('/v1/admin/', '/v1/escrows/../admin/'),
        p.replace('/v1/admin/', '/v1/escrows/%2e%2e/admin/'),
        p.replace('/v1/admin/', '/v1/./admin/'),
        `${p};x=1`,
        `${p}?admin=1`,
        `${p}%00`,
        `${p}%20`,
        p.replace('/admin', '/%61dmin'),
      ];
      let tried = 0;
      for (const def of roots) {
        for (const path of spellings(fillPath(def.path))) {
          for (const method of ['GET', 'POST', 'DELETE', 'PUT', 'PATCH']) {
            const r = await a.req(method, path, method === 'GET' ? undefined : {}, bearer(k.secret));
            tried++;
            assert.ok(r.status >= 400, `${method} ${path} answered ${r.status} ${r.text.slice(0, 200)} to a minted key`);
            assert.ok(
              ['forbidden', 'not_found', 'bad_request', 'method_not_allowed'].includes(r.body?.error?.code),
              `${method} ${path}: ${r.status} ${r.text.slice(0, 200)}`,
            );
          }
        }
      }
      for (const [h, v] of [
        ['x-original-url', '/v1/admin/keys'],
        ['x-rewrite-url', '/v1/admin/keys'],
        ['x-http-method-override', 'DELETE'],
        ['x-forwarded-prefix', '/v1/admin'],
        ['x-forwarded-for', '127.0.0.1'],
      ]) {
        const r = await a.req('GET', '/v1/escrows?limit=1', undefined, { ...bearer(k.secret), [h]: v });
        tried++;
        assert.equal(r.status, 200, r.text);
        assert.ok(Array.isArray(r.body.escrows) && !('keys' in r.body), `${h} rerouted the request`);
      }
      for (const def of a.app.routes.filter((d) => d.sandboxOnly)) {
        const r = await a.req(def.method, def.path, { advanceSeconds: 1, count: 1 }, bearer(k.secret));
        tried++;
        assert.equal(r.body?.error?.code, 'forbidden', `${def.path}: ${r.text}`);
      }
      assert.equal((await a.req('GET', '/.well-known/proof-issuer.json')).body.keys.length, issuersBefore, 'no rotation happened');
      assert.equal(
        (await a.req('GET', '/v1/admin/keys', undefined, bearer(ROOT))).body.keys.length,
        keysBefore,
        'no key was minted or revoked',
      );
      process.stdout.write(`# ${kind}: ${tried} admin attempts with a minted key, all refused\n`);
    });

    test('a revoked key fails on the very next request, on the other instance too, also while requests are in flight', async () => {
      for (let i = 0; i < 15; i++) {
        const k = await mint(`cycle ${i}`);
        assert.equal((await b.req('GET', '/v1/escrows?limit=1', undefined, bearer(k.secret))).status, 200);
        // Requests in flight on both instances while the key is revoked.
        let revokedAt = 0;
        const inflight = (async () => {
          const after: number[] = [];
          for (let j = 0; j < 12; j++) {
            const startedAfterRevoke = revokedAt > 0;
            const r = await (j % 2 ? a : b).req('GET', '/v1/escrows?limit=1', undefined, bearer(k.secret));
            if (startedAfterRevoke) after.push(r.status);
          }
          return after;
        })();
        const del = await a.req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
        assert.equal(del.status, 200, del.text);
        revokedAt = Date.now();
        const next = await b.req('GET', '/v1/escrows?limit=1', undefined, bearer(k.secret));
        assert.equal(next.status, 401, `the next request after revocation: ${next.status}`);
        assert.equal(next.body.error.code, 'unauthorized');
        const burst = await Promise.all(
          Array.from({ length: 6 }, (_, j) => (j % 2 ? a : b).req('POST', '/v1/agents', {}, bearer(k.secret))),
        );
        assert.deepEqual(
          burst.map((r) => r.status),
          Array(6).fill(401),
        );
        for (const s of await inflight) assert.equal(s, 401, 'a request started after the revocation answered');
      }
    });

    test('no response carries a secret: every route walked with the root key, a minted key, near-miss keys and none', async () => {
      const k = await mint('scan');
      const near = [
        `${ROOT}x`,
        ROOT.slice(0, -1),
        ROOT.toUpperCase(),
        `${k.secret}x`,
        k.secret.slice(0, -1),
        k.secret.toUpperCase(),
        `esk_${ROOT}`,
      ];
      for (const def of a.app.routes) {
        if (/rotate/.test(def.path) || (def.method === 'DELETE' && def.path.startsWith('/v1/admin'))) continue;
        for (const key of [ROOT, k.secret, ...near, '']) {
          await a.req(def.method, fillPath(def.path), def.method === 'GET' ? undefined : {}, key ? bearer(key) : {});
        }
      }
      await a.req('GET', '/v1/admin/metrics', undefined, bearer(ROOT));
      await a.req('GET', '/v1/admin/rate', undefined, bearer(ROOT));
      const listed = (await a.req('GET', '/v1/admin/keys', undefined, bearer(ROOT))).body.keys;
      for (const rec of listed)
        assert.deepEqual(
          Object.keys(rec).filter((f) => /secret|hash/i.test(f)),
          [],
          'key records carry no secret or hash',
        );
      const leaks = seen.filter((s) => secrets.some((x) => s.includes(x)));
      assert.deepEqual(
        leaks.map((s) => s.slice(0, 200)),
        [],
        `${leaks.length} of ${seen.length} responses carry a secret`,
      );
      const rows = JSON.stringify(await a.db.query('SELECT * FROM api_keys'));
      for (const x of secrets.slice(1)) assert.ok(!rows.includes(x), 'the database keeps no minted secret');
      process.stdout.write(`# ${kind}: ${seen.length} responses scanned for ${secrets.length} secrets\n`);
    });

    test('webhook targets cannot reach private addresses with WEBHOOK_ALLOW_PRIVATE off: registration and delivery (DNS rebinding included)', async () => {
      const rx = await receiver();
      try {
        const port = new URL(rx.url).port;
        const dns = fakeDns({
          'rebind.test': ['93.184.216.34'],
          'internal.test': ['10.0.0.5'],
          'mixed.test': ['93.184.216.34', '127.0.0.1'],
          'v6.test': ['::ffff:127.0.0.1'],
          'nat64.test': ['64:ff9b::7f00:1'],
        });
        const hosted = harness(kind, a.db, { API_KEY: ROOT }, { resolveHost: dns.resolveHost });
        const refused = [
          `http://127.0.0.1:${port}/hook`,
          'http://127.1/',
          'http://2130706433/',
          'http://0x7f000001/',
          'http://0177.0.0.1/',
          'http://0/',
          'http://localhost/',
          'http://a.localhost/',
          'http://[::1]/',
          'http://[::ffff:127.0.0.1]/',
          'http://[::ffff:7f00:1]/',
          'http://[0:0:0:0:0:ffff:127.0.0.1]/',
          'http://[64:ff9b::7f00:1]/',
          'http://[2002:7f00:1::]/',
          'http://[::]/',
          'http://0.0.0.0/',
          'http://10.0.0.1/',
          'http://172.16.0.1/',
          'http://192.168.1.1/',
          'http://169.254.169.254/latest/meta-data/',
          'http://100.64.0.1/',
          'http://[fc00::1]/',
          'http://[fe80::1%25eth0]/',
          'http://224.0.0.1/',
          'http://[ff02::1]/',
          'http://255.255.255.255/',
          'http://198.18.0.1/',
          'http://１２７.０.０.１/',
          'http://127.0.0.1.:80/',
          'http://[::127.0.0.1]/',
          'http://internal.test/',
          'http://mixed.test/',
          'http://v6.test/',
          'http://nat64.test/',
          'http://nxdomain.test/',
          'file:///etc/passwd',
          'gopher://127.0.0.1:6379/_INFO',
          'http://user:pw@93.184.216.34/',
        ];
        for (const url of refused) {
          const r = await hosted.req('POST', '/v1/webhooks', { url }, bearer(ROOT));
          assert.equal(r.status, 400, `${url}: ${r.status} ${r.text}`);
          assert.equal(r.body.error.code, 'bad_request');
        }
        assert.deepEqual((await hosted.req('GET', '/v1/webhooks', undefined, bearer(ROOT))).body.webhooks, [], 'nothing was registered');

        // Delivery: URLs that got in anyway (a sandbox instance allowing private targets registered the
        // receiver's loopback URL; a name public at registration resolves to loopback at connect time).
        // The fetch transport (the Deno edge's) only ever sees the literal loopback URL, so no name
        // is ever looked up in real DNS; the Node transport gets a fake DNS that rebinds to loopback.
        const open = harness(kind, a.db, { WEBHOOK_ALLOW_PRIVATE: 'on' });
        assert.equal((await open.req('POST', '/v1/webhooks', { url: rx.url })).status, 201);
        const payer = (await hosted.req('POST', '/v1/agents', {}, bearer(ROOT))).body.id;
        const payee = (await hosted.req('POST', '/v1/agents', {}, bearer(ROOT))).body.id;
        const escrow = async () => {
          const e = (
            await hosted.req(
              'POST',
              '/v1/escrows',
              { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer, payeeAgentId: payee },
              bearer(ROOT),
            )
          ).body;
          await hosted.req('POST', `/v1/escrows/${e.id}/fund`, undefined, bearer(ROOT));
        };
        const send = async (transport: AppDeps['webhookTransport']) => {
          const sender = harness(kind, a.db, { API_KEY: ROOT, WEBHOOK_BACKOFF_MS: '0,0' }, { webhookTransport: transport });
          for (let i = 0; i < 4; i++) await sendDueOnce(sender.app.svc);
        };
        await escrow();
        await send(fetchTransport());
        assert.equal((await hosted.req('POST', '/v1/webhooks', { url: `http://rebind.test:${port}/hook` }, bearer(ROOT))).status, 201);
        await escrow();
        await send(createNodeTransport({ lookupAll: fakeDns({ 'rebind.test': ['127.0.0.1'] }).lookupAll }));
        assert.equal(rx.seen, 0, 'the receiver on 127.0.0.1 was never reached');
        const errors = await a.db.query<{ last_error: string }>(
          `SELECT last_error FROM outbox WHERE last_error IS NOT NULL UNION ALL SELECT last_error FROM dead_letters`,
        );
        assert.ok(errors.length > 0 && errors.every((r) => /refused/.test(r.last_error)), JSON.stringify(errors.slice(0, 5)));
        await open.req('DELETE', '/v1/webhooks', { url: rx.url });
        await hosted.req('DELETE', '/v1/webhooks', { url: `http://rebind.test:${port}/hook` }, bearer(ROOT));
        process.stdout.write(
          `# ${kind}: ${refused.length} private targets refused at registration; ${errors.length} delivery attempts refused at connect time\n`,
        );
      } finally {
        await rx.close();
      }
    });
  });
}

test('a hosted process logs no secret: request log and stderr after root, minted, revoked and near-miss keys', {
  timeout: 120_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-auth-'));
  let proc: Proc | undefined;
  try {
    proc = await startService(TSX, {
      DATA_DIR: ':memory:',
      API_KEY: ROOT,
      HOST: '127.0.0.1',
      REQUEST_LOG: join(dir, 'requests.log'),
      ...LIMITS,
    });
    counts.restarts++;
    const root = caller(proc.url, bearer(ROOT));
    const minted = await ok(root, 'POST', '/v1/admin/keys', { label: 'logged' }, 201);
    const asKey = caller(proc.url, bearer(minted.secret));
    await ok(asKey, 'POST', '/v1/agents', { label: 'x' }, 201);
    assert.equal((await asKey('GET', '/v1/admin/metrics')).status, 403);
    for (const wrong of [`${ROOT}x`, `${minted.secret}x`, minted.secret.toUpperCase()])
      assert.equal((await caller(proc.url, bearer(wrong))('GET', '/v1/escrows')).status, 401);
    await ok(root, 'DELETE', `/v1/admin/keys/${minted.id}`);
    assert.equal((await asKey('GET', '/v1/escrows')).status, 401);
    await ok(root, 'GET', '/v1/admin/metrics');
    assert.equal(await proc.stop('SIGTERM'), 0);
    const logged = readFileSync(join(dir, 'requests.log'), 'utf8');
    assert.ok(logged.split('\n').filter(Boolean).length >= 9, 'the request log has the requests');
    for (const text of [logged, proc.stderr()]) {
      for (const x of [ROOT, minted.secret, minted.secret.slice(4)]) assert.ok(!text.includes(x), 'a secret reached the logs');
      assert.ok(!/authorization|bearer/i.test(text), 'no Authorization header in the logs');
    }
  } finally {
    if (proc && proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    report('auth: hosted process logs');
  }
});
