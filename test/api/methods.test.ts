// Methods (docs/protocol.md §9.5): 405 with Allow for a known path, OPTIONS 204 with Allow,
// HEAD as GET without a body, and methods the service never serves never a 500.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';

describeStores('HTTP methods', (h) => {
  test('a known path with another method is 405 method_not_allowed with an Allow header', async () => {
    const r = await h().req('DELETE', '/v1/escrows');
    assert.match(expectError(r, 405, 'method_not_allowed'), /\/v1\/escrows does not take "DELETE"; it takes GET, HEAD, POST, OPTIONS/);
    assert.equal(r.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
    const p = await h().req('PUT', '/v1/escrows/esc_01aaaaaaaaaaaaaaaaaaaaaaaa', {});
    expectError(p, 405, 'method_not_allowed');
    assert.equal(p.headers.get('allow'), 'GET, HEAD, OPTIONS');
    const w = await h().req('PATCH', '/v1/webhooks', {});
    assert.equal(w.headers.get('allow'), 'GET, HEAD, POST, DELETE, OPTIONS');
  });

  test('the Allow of every route lists its method (read off the same table the router uses)', async () => {
    for (const def of h().app.routes) {
      const path = def.path.replace(/:\w+/g, 'x_1');
      const r = await h().req('OPTIONS', path);
      assert.equal(r.status, 204, `${def.path}: ${r.text}`);
      assert.ok(r.headers.get('allow')!.split(', ').includes(def.method), `${def.method} ${def.path}: ${r.headers.get('allow')}`);
      assert.equal(r.text, '');
    }
  });

  test('unknown methods (PROPFIND, FOO) are 405 on known paths and on unknown ones, never 500', async () => {
    for (const m of ['PROPFIND', 'FOO', 'M-SEARCH']) {
      const known = await h().app.fetch(new Request('http://test.local/health', { method: m }));
      assert.equal(known.status, 405, m);
      assert.equal(known.headers.get('allow'), 'GET, HEAD, OPTIONS');
      assert.equal((await known.json()).error.code, 'method_not_allowed');
      const unknown = await h().app.fetch(new Request('http://test.local/nowhere', { method: m }));
      assert.equal(unknown.status, 405, m);
      assert.equal(unknown.headers.get('allow'), '');
    }
  });

  test('OPTIONS on an unknown path is 404; on a known one 204 with no CORS headers when none are configured', async () => {
    expectError(await h().req('OPTIONS', '/v1/nowhere'), 404, 'not_found');
    const r = await h().req('OPTIONS', '/v1/escrows', undefined, {
      origin: 'https://elsewhere.example',
      'access-control-request-method': 'POST',
    });
    // Not an allowed origin: refused like any cross-site request.
    expectError(r, 403, 'forbidden');
    const plain = await h().req('OPTIONS', '/v1/escrows');
    assert.equal(plain.status, 204);
    assert.equal(plain.headers.get('access-control-allow-origin'), null);
  });

  test('HEAD answers as GET with no body', async () => {
    const r = await h().app.fetch(new Request('http://test.local/health', { method: 'HEAD' }));
    assert.equal(r.status, 200);
    assert.equal(await r.text(), '');
    assert.match(r.headers.get('content-type')!, /application\/json/);
    const missing = await h().app.fetch(new Request('http://test.local/v1/escrows/esc_01aaaaaaaaaaaaaaaaaaaaaaaa', { method: 'HEAD' }));
    assert.equal(missing.status, 404);
  });
});
