// Browser safety (docs/protocol.md §18.5): foreign origins are refused before
// anything is done, CORS answers the origins the operator lists, and the open sandbox answers only
// to host names a DNS-rebinding page cannot take.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { bearer, HOSTED, ROOT } from '../admin/helpers.ts';

const APP = 'https://app.example.com';
const count = async (h: () => { db: { query: (s: string) => Promise<any[]> } }) =>
  Number((await h().db.query('SELECT count(*)::int AS n FROM agents'))[0].n);

describeStores('cross-site requests to the open sandbox', (h) => {
  test('a text/plain or form POST from another origin is 403 forbidden and creates nothing', async () => {
    const before = await count(h);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const r = await h().req('POST', '/v1/agents', '{"label":"csrf"}', {
        'content-type': type,
        origin: 'https://evil.example',
        host: 'localhost:4280',
      });
      assert.match(expectError(r, 403, 'forbidden'), /https:\/\/evil\.example/);
    }
    // Origin "null" (sandboxed frames, file: pages) is not an origin the service trusts either.
    expectError(await h().req('POST', '/v1/agents', '{}', { origin: 'null', host: 'localhost:4280' }), 403, 'forbidden');
    assert.equal(await count(h), before);
  });

  test('Sec-Fetch-Site: cross-site without an Origin is refused, except a top-level GET navigation', async () => {
    const before = await count(h);
    expectError(
      await h().req('POST', '/v1/agents', '{}', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }),
      403,
      'forbidden',
    );
    expectError(
      await h().req('GET', '/v1/escrows', undefined, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }),
      403,
      'forbidden',
    );
    // A link to the docs from another site still opens.
    const nav = await h().req('GET', '/docs/errors', undefined, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' });
    assert.equal(nav.status, 200);
    // A navigation that POSTs (a form) is not let through.
    expectError(
      await h().req('POST', '/v1/agents', '{}', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' }),
      403,
      'forbidden',
    );
    // Same-site and same-origin fetch metadata are fine.
    assert.equal((await h().req('POST', '/v1/agents', '{}', { 'sec-fetch-site': 'same-origin' })).status, 201);
    assert.equal(await count(h), before + 1);
  });

  test("the service's own origin passes: the Host it was reached at, or PUBLIC_URL", async () => {
    for (const [origin, host] of [
      ['http://localhost:4280', 'localhost:4280'],
      ['http://127.0.0.1:4280', '127.0.0.1:4280'],
      ['http://[::1]:4280', '[::1]:4280'],
    ]) {
      const r = await h().req('POST', '/v1/agents', '{"label":"console"}', { origin, host, 'sec-fetch-site': 'same-origin' });
      assert.equal(r.status, 201, `${origin}: ${r.text}`);
    }
    // A different port on the same host is another origin.
    expectError(await h().req('POST', '/v1/agents', '{}', { origin: 'http://localhost:3000', host: 'localhost:4280' }), 403, 'forbidden');
  });

  test('requests with no Origin work as before, whatever their content type (the README curl -d session)', async () => {
    const r = await h().req('POST', '/v1/agents', '{"label":"curl"}', {
      'content-type': 'application/x-www-form-urlencoded',
      host: '127.0.0.1:4280',
    });
    assert.equal(r.status, 201, r.text);
    expectError(
      await h().req('POST', '/v1/agents', 'label=x', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
      'bad_request',
    );
  });

  test('the open sandbox answers only to known host names: others are 421 misdirected_request (DNS rebinding)', async () => {
    const before = await count(h);
    for (const host of ['evil.example', 'evil.example:4280', 'rebind.attacker.test:4280', 'local host', 'a@b']) {
      const r = await h().req('POST', '/v1/agents', '{}', { host, origin: `http://${host}` });
      expectError(r, 421, 'misdirected_request');
      const g = await h().req('GET', '/health', undefined, { host });
      expectError(g, 421, 'misdirected_request');
    }
    assert.equal(await count(h), before);
    for (const host of [
      'localhost',
      'localhost:4280',
      'app.localhost:4280',
      '127.0.0.1:4280',
      '127.1.2.3',
      '[::1]:4280',
      '192.168.1.20:4280',
    ]) {
      assert.equal((await h().req('GET', '/health', undefined, { host })).status, 200, host);
    }
  });
});

describeStores(
  'a sandbox with PUBLIC_URL',
  (h) => {
    test("PUBLIC_URL's host is known, and its origin is the service's own", async () => {
      const r = await h().req('POST', '/v1/agents', '{}', { host: 'sandbox.dev.example:8443', origin: 'https://sandbox.dev.example:8443' });
      assert.equal(r.status, 201, r.text);
      expectError(await h().req('GET', '/health', undefined, { host: 'other.dev.example' }), 421, 'misdirected_request');
    });
  },
  { PUBLIC_URL: 'https://sandbox.dev.example:8443' },
);

describeStores(
  'CORS on a hosted deployment',
  (h) => {
    test("a preflight from an allowed origin is 204 with the path's methods and the allowed headers", async () => {
      const r = await h().req('OPTIONS', '/v1/escrows', undefined, {
        origin: APP,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      });
      assert.equal(r.status, 204, r.text);
      assert.equal(r.headers.get('access-control-allow-origin'), APP);
      assert.equal(r.headers.get('access-control-allow-methods'), 'GET, HEAD, POST, OPTIONS');
      const allowed = r.headers.get('access-control-allow-headers')!.split(', ');
      for (const hd of ['authorization', 'content-type', 'idempotency-key']) assert.ok(allowed.includes(hd), hd);
      assert.equal(r.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
      assert.match(r.headers.get('vary')!, /Origin/);
      // A preflight needs no key: browsers never send credentials on it.
      assert.equal(r.headers.get('access-control-allow-credentials'), null);
    });

    test('actual responses to an allowed origin carry CORS headers, errors included', async () => {
      const ok = await h().req('GET', '/v1/escrows', undefined, { origin: APP, ...bearer(ROOT) });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('access-control-allow-origin'), APP);
      assert.match(ok.headers.get('access-control-expose-headers')!, /x-request-id/);
      const denied = await h().req('GET', '/v1/escrows', undefined, { origin: APP });
      expectError(denied, 401, 'unauthorized');
      assert.equal(denied.headers.get('access-control-allow-origin'), APP);
    });

    test('an origin not listed is 403 and gets no CORS headers; requests without Origin get Vary only', async () => {
      const r = await h().req('POST', '/v1/agents', '{}', { origin: 'https://evil.example', ...bearer(ROOT) });
      expectError(r, 403, 'forbidden');
      assert.equal(r.headers.get('access-control-allow-origin'), null);
      const p = await h().req('OPTIONS', '/v1/escrows', undefined, {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
      });
      expectError(p, 403, 'forbidden');
      const plain = await h().req('GET', '/v1/escrows', undefined, bearer(ROOT));
      assert.equal(plain.status, 200);
      assert.equal(plain.headers.get('access-control-allow-origin'), null);
      assert.match(plain.headers.get('vary')!, /Origin/);
    });

    test('a hosted deployment answers to any Host name (bearer keys, not the network, protect it)', async () => {
      assert.equal((await h().req('GET', '/v1/escrows', undefined, { host: 'api.escrow.example', ...bearer(ROOT) })).status, 200);
    });
  },
  { ...HOSTED, CORS_ORIGINS: `${APP}, http://localhost:5173` },
);

test('PUBLIC_URL: default the listening address (wildcard HOST as 127.0.0.1, IPv6 bracketed), rebuilt with a bound port; bad values name the variable', async () => {
  const { parseConfig, withListeningPort } = await import('../../src/config.ts');
  const { ConfigError } = await import('../../src/errors.ts');
  assert.equal(parseConfig({}).publicUrl, 'http://127.0.0.1:4280');
  assert.equal(parseConfig({ API_KEY: 'k'.repeat(20) }).publicUrl, 'http://127.0.0.1:4280');
  assert.equal(parseConfig({ HOST: '::1', PORT: '8080' }).publicUrl, 'http://[::1]:8080');
  assert.equal(parseConfig({ PUBLIC_URL: 'https://escrow.example.com/api/' }).publicUrl, 'https://escrow.example.com/api');
  assert.equal(withListeningPort(parseConfig({ PORT: '0' }), { PORT: '0' }, 43123).publicUrl, 'http://127.0.0.1:43123');
  const fixed = parseConfig({ PUBLIC_URL: 'https://x.example' });
  assert.equal(withListeningPort(fixed, { PUBLIC_URL: 'https://x.example' }, 1), fixed);
  for (const [name, value] of [
    ['PUBLIC_URL', 'ftp://x'],
    ['PUBLIC_URL', '/relative'],
    ['PUBLIC_URL', 'https://x.example/?q=1'],
    ['PUBLIC_URL', 'https://u:p@x.example'],
    ['CORS_ORIGINS', 'https://a.example/path'],
    ['CORS_ORIGINS', '*'],
    ['AUTH_FAIL_RATE_LIMIT_MAX', '0'],
    ['AUTH_FAIL_RATE_LIMIT_MAX', 'many'],
  ]) {
    assert.throws(
      () => parseConfig({ [name]: value }),
      (e: unknown) => e instanceof ConfigError && e.variable === name && e.message.startsWith(`${name}:`),
      `${name}=${value}`,
    );
  }
  assert.deepEqual(parseConfig({ CORS_ORIGINS: 'https://a.example, http://localhost:5173,' }).corsOrigins, [
    'https://a.example',
    'http://localhost:5173',
  ]);
  assert.equal(parseConfig({}).authFailRateLimitMax, 100);
});
