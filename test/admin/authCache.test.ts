// Minted-key authentication without a round trip per request (docs/design.md §5): a verified key is
// cached per instance; a revocation on any instance still refuses the very next request everywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, makeHarness, type Harness } from '../harness.ts';
import { createApp } from '../../src/app.ts';
import type { Db } from '../../src/db/types.ts';
import { bearer, HOSTED, mint, ROOT } from './helpers.ts';

/** The same database, with every statement text recorded. */
function counting(db: Db): { db: Db; texts: string[] } {
  const texts: string[] = [];
  const wrapped: Db = Object.create(db);
  wrapped.query = (text, params) => {
    texts.push(text);
    return db.query(text, params);
  };
  return { db: wrapped, texts };
}

describeStores(
  'authentication cache and revocation generation',
  (h) => {
    test('a minted key is read from the database once; later requests make one statement (the budget)', async () => {
      const k = await mint(h(), {});
      const { db, texts } = counting(h().db);
      const app = createApp({ db, config: h().config });
      const call = () => app.fetch(new Request('http://test.local/v1/sandbox/clock', { headers: bearer(k.secret) }), { ip: '127.0.0.1' });
      assert.equal((await call()).status, 200);
      assert.equal(texts.filter((t) => t.includes('api_keys')).length, 1);
      texts.length = 0;
      for (let i = 0; i < 5; i++) assert.equal((await call()).status, 200);
      assert.equal(texts.filter((t) => t.includes('api_keys')).length, 0, texts.join('\n---\n'));
      // Per request: the rate-limit statement, which also reads the revocation generation.
      assert.equal(texts.filter((t) => t.includes('INSERT INTO rate_counters') && t.includes('api_key_generation')).length, 5);
    });

    test('a key revoked on one instance is refused on the next request on another that had it cached', async () => {
      const other: Harness = await makeHarness(h().kind, { ...HOSTED }, { db: h().db });
      const k = await mint(h(), {});
      for (let i = 0; i < 3; i++) assert.equal((await other.req('GET', '/v1/escrows', undefined, bearer(k.secret))).status, 200);
      const del = await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      assert.equal(del.status, 200, del.text);
      const r = await other.req('GET', '/v1/escrows', undefined, bearer(k.secret));
      expectError(r, 401, 'unauthorized');
      // Other keys cached on that instance keep working after the re-check.
      const live = await mint(h(), {});
      assert.equal((await other.req('GET', '/v1/escrows', undefined, bearer(live.secret))).status, 200);
      await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      assert.equal((await other.req('GET', '/v1/escrows', undefined, bearer(live.secret))).status, 200);
    });

    test('a revoked key is never cached again, and an unknown one never is', async () => {
      const k = await mint(h(), {});
      await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      for (let i = 0; i < 2; i++) expectError(await h().req('GET', '/v1/escrows', undefined, bearer(k.secret)), 401, 'unauthorized');
      expectError(await h().req('GET', '/v1/escrows', undefined, bearer('esk_' + 'B'.repeat(43))), 401, 'unauthorized');
    });
  },
  { ...HOSTED, AUTH_FAIL_RATE_LIMIT_MAX: '1000' },
);
