// Both webhook transports against real loopback receivers: status, redirects, timeouts, private-address refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeTransport, guardedLookup, type LookupAll } from '../../src/node/webhookTransport.ts';
import { fetchTransport, type WebhookTransport } from '../../src/webhooks/transport.ts';
import { receiver } from './helpers.ts';

const req = (url: string, over: Partial<Parameters<WebhookTransport>[0]> = {}) => ({
  url,
  headers: { 'content-type': 'application/json', 'x-test': 'yes' },
  body: '{"a":1}',
  timeoutMs: 1000,
  allowPrivate: true,
  ...over,
});

/** A DNS that answers what the test says: a name can "rebind" to a private address after registration. */
const fakeDns =
  (answers: Record<string, string[]>): LookupAll =>
  (hostname, _options, cb) => {
    const a = answers[hostname];
    if (!a) return cb(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    cb(
      null,
      a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };

const TRANSPORTS: Array<[string, () => WebhookTransport]> = [
  ['the Node transport', () => createNodeTransport()],
  ['the fetch transport', () => fetchTransport()],
];

for (const [name, make] of TRANSPORTS) {
  test(`${name} POSTs the body and headers and reports the receiver's status`, async () => {
    const rx = await receiver((n) => (n === 0 ? 204 : 500));
    try {
      const t = make();
      assert.deepEqual(await t(req(rx.url)), { status: 204 });
      assert.deepEqual(await t(req(rx.url)), { status: 500 });
      assert.equal(rx.got[0].body, '{"a":1}');
      assert.equal(rx.got[0].headers['x-test'], 'yes');
      assert.equal(rx.got[0].headers['content-length'], '7');
    } finally {
      await rx.close();
    }
  });

  test(`${name} never follows a redirect: a 3xx is the answer and its target is never contacted`, async () => {
    const target = await receiver();
    const bouncer = createServer((_q, res) => res.writeHead(302, { location: target.url }).end());
    await new Promise<void>((r) => bouncer.listen(0, '127.0.0.1', r));
    try {
      const r = await make()(req(`http://127.0.0.1:${(bouncer.address() as AddressInfo).port}/`));
      assert.deepEqual(r, { status: 302 });
      assert.equal(target.seen, 0);
    } finally {
      bouncer.closeAllConnections();
      bouncer.close();
      await target.close();
    }
  });

  test(`${name} gives up after timeoutMs on a receiver that never answers`, async () => {
    const rx = await receiver(() => 'hang');
    try {
      const started = Date.now();
      const r = await make()(req(rx.url, { timeoutMs: 300 }));
      const took = Date.now() - started;
      assert.deepEqual(r, { error: 'timeout' });
      assert.ok(took >= 290 && took < 2000, `took ${took} ms`);
    } finally {
      await rx.close();
    }
  });

  test(`${name} refuses literal private hosts and localhost without connecting when private destinations are off`, async () => {
    const rx = await receiver();
    try {
      const port = new URL(rx.url).port;
      for (const host of ['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]', '0.0.0.0']) {
        const r = await make()(req(`http://${host}:${port}/hook`, { allowPrivate: false }));
        assert.ok('error' in r && /^refused: /.test(r.error), `${host}: ${JSON.stringify(r)}`);
      }
      assert.equal(rx.seen, 0);
    } finally {
      await rx.close();
    }
  });

  test(`${name} reports a refused connection as an error, not a status`, async () => {
    const rx = await receiver();
    await rx.close();
    const r = await make()(req(rx.url));
    assert.ok('error' in r, JSON.stringify(r));
  });
}

test('the Node transport checks the addresses a name resolves to at connect time (DNS rebinding cannot pass)', async () => {
  const rx = await receiver();
  try {
    const port = new URL(rx.url).port;
    const t = createNodeTransport({
      lookupAll: fakeDns({ 'rebind.test': ['127.0.0.1'], 'mixed.test': ['93.184.216.34', '10.0.0.1'], 'v6.test': ['::ffff:127.0.0.1'] }),
    });
    for (const host of ['rebind.test', 'mixed.test', 'v6.test']) {
      const r = await t(req(`http://${host}:${port}/hook`, { allowPrivate: false }));
      assert.ok('error' in r && /^refused: host .* resolves to/.test(r.error), `${host}: ${JSON.stringify(r)}`);
    }
    assert.equal(rx.seen, 0);
    // The same name with private destinations allowed connects (the guard is not installed).
    const ok = await createNodeTransport({ lookupAll: fakeDns({}) })(req(`http://localhost:${port}/hook`));
    assert.deepEqual(ok, { status: 200 });
  } finally {
    await rx.close();
  }
});

test('the guarded lookup answers in both callback forms and refuses loopback names', async () => {
  const lookup = guardedLookup(fakeDns({ 'pub.test': ['93.184.216.34', '2606:2800:220:1::1'], 'lo.test': ['::1'] }));
  const one = await new Promise<unknown[]>((r) => lookup('pub.test', {}, (...a) => r(a)));
  assert.deepEqual(one, [null, '93.184.216.34', 4]);
  const all = await new Promise<unknown[]>((r) => lookup('pub.test', { all: true }, (...a) => r(a)));
  assert.equal(all[0], null);
  assert.deepEqual(
    (all[1] as Array<{ address: string }>).map((a) => a.address),
    ['93.184.216.34', '2606:2800:220:1::1'],
  );
  const bad = await new Promise<unknown[]>((r) => lookup('lo.test', {}, (...a) => r(a)));
  assert.match(String((bad[0] as Error).message), /lo\.test resolves to ::1/);
  const real = await new Promise<unknown[]>((r) => guardedLookup()('localhost', {}, (...a) => r(a)));
  assert.ok(real[0] instanceof Error, "the system resolver's localhost is refused too");
});
