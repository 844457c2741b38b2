// Every route in the route table, walked with no key, a wrong key, a minted key and the root key (docs/protocol.md §18.1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { bearer, fillPath, HOSTED, mint, ROOT } from './helpers.ts';

const WRONG: Array<[string, Record<string, string>]> = [
  ['no Authorization header', {}],
  ['a wrong key', bearer('wrong-key-0123456789abcdef')],
  ['an esk_ secret that was never minted', bearer('esk_' + 'A'.repeat(43))],
  ['a Basic credential', { authorization: 'Basic cm9vdDpyb290' }],
  ['the root key in another case', bearer(ROOT.toUpperCase())],
];

describeStores(
  'authentication over the whole route table, hosted',
  (h) => {
    test('the route table declares an access level and a rate unit for every /v1 route', () => {
      for (const def of h().app.routes) {
        assert.ok(['public', 'key', 'root'].includes(def.access), `${def.method} ${def.path}`);
        if (def.path.startsWith('/v1/')) assert.ok(def.rate, `${def.method} ${def.path} has no rate unit`);
      }
      assert.ok(
        h()
          .app.routes.filter((d) => d.path.startsWith('/v1/admin/'))
          .every((d) => d.access === 'root'),
      );
    });

    for (const [what, headers] of WRONG) {
      test(`every key and root route answers 401 unauthorized with ${what}`, async () => {
        for (const def of h().app.routes.filter((d) => d.access !== 'public')) {
          const res = await h().req(def.method, fillPath(def.path), def.method === 'GET' ? undefined : {}, headers);
          assert.equal(res.status, 401, `${def.method} ${def.path}: ${res.text}`);
          expectError(res, 401, 'unauthorized');
        }
      });
    }

    test('every public route answers without a key (never 401 or 403)', async () => {
      const publicRoutes = h().app.routes.filter((d) => d.access === 'public');
      assert.ok(publicRoutes.some((d) => d.path === '/v1/log/head'));
      for (const def of publicRoutes) {
        const res = await h().req(def.method, fillPath(def.path), def.method === 'GET' ? undefined : {});
        assert.ok(![401, 403].includes(res.status), `${def.method} ${def.path}: ${res.status} ${res.text}`);
        assert.ok(res.headers.get('x-request-id'));
      }
    });

    test('every admin route answers 403 forbidden to a minted key, which every other key route accepts', async () => {
      const key = await mint(h(), { label: 'walker' });
      for (const def of h().app.routes.filter((d) => d.access !== 'public')) {
        const res = await h().req(def.method, fillPath(def.path), def.method === 'GET' ? undefined : {}, bearer(key.secret));
        if (def.access === 'root') expectError(res, 403, 'forbidden');
        else if (def.sandboxOnly) expectError(res, 403, 'forbidden');
        else assert.ok(![401, 403].includes(res.status), `${def.method} ${def.path}: ${res.status} ${res.text}`);
      }
    });

    test('the root key passes authentication on every route (sandbox-only routes excepted: 403 when hosted)', async () => {
      for (const def of h().app.routes.filter((d) => d.access !== 'public' && d.method !== 'DELETE' && !/rotate/.test(d.path))) {
        const res = await h().req(def.method, fillPath(def.path), def.method === 'GET' ? undefined : {}, bearer(ROOT));
        if (def.sandboxOnly) expectError(res, 403, 'forbidden');
        else assert.ok(![401, 403].includes(res.status), `${def.method} ${def.path}: ${res.status} ${res.text}`);
      }
    });

    test('every response carries x-request-id, echoing a well-formed client value', async () => {
      const given = await h().req('GET', '/v1/escrows', undefined, { 'x-request-id': 'client-chosen-42' });
      assert.equal(given.headers.get('x-request-id'), 'client-chosen-42');
      const made = await h().req('GET', '/v1/nowhere');
      assert.match(made.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    });
  },
  { ...HOSTED, PUBLIC_RATE_LIMIT_MAX: '100000', AUTH_FAIL_RATE_LIMIT_MAX: '100000' },
);

describeStores('admin routes in the open sandbox', (h) => {
  test('every admin route answers 403 forbidden when no API key is configured, with or without a bearer header', async () => {
    const admin = h().app.routes.filter((d) => d.access === 'root');
    assert.equal(admin.length, 7);
    for (const def of admin) {
      for (const headers of [{}, bearer(ROOT)]) {
        const res = await h().req(def.method, fillPath(def.path), def.method === 'GET' ? undefined : {}, headers);
        assert.match(expectError(res, 403, 'forbidden'), /API_KEY/, `${def.method} ${def.path}`);
      }
    }
  });
});
