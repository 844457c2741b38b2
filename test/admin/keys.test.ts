// Minted bearer keys: mint, use, list, revoke (docs/protocol.md §18.2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeStores, expectError } from '../harness.ts';
import { bearer, HOSTED, mint, ROOT } from './helpers.ts';

const KEY_ID = /^key_[0-9a-hjkmnp-tv-z]{26}$/;

describeStores(
  'bearer keys',
  (h) => {
    test('minting returns the id, label, createdAt, rateLimitMax and an esk_ secret with 256 bits of randomness', async () => {
      const r = await h().req('POST', '/v1/admin/keys', { label: 'ci runner', rateLimitMax: 50 }, bearer(ROOT));
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(Object.keys(r.body).sort(), ['createdAt', 'id', 'label', 'rateLimitMax', 'secret']);
      assert.match(r.body.id, KEY_ID);
      assert.equal(r.body.label, 'ci runner');
      assert.equal(r.body.rateLimitMax, 50);
      assert.match(r.body.secret, /^esk_[A-Za-z0-9_-]{43}$/);
      assert.equal(new Date(r.body.createdAt).toISOString(), r.body.createdAt);
      assert.equal(r.headers.get('cache-control'), 'no-store');
    });

    test('minting with no body gives an empty label and no rateLimitMax; two secrets never repeat', async () => {
      const a = await h().req('POST', '/v1/admin/keys', undefined, bearer(ROOT));
      const b = await mint(h());
      assert.equal(a.status, 201, a.text);
      assert.deepEqual(Object.keys(a.body).sort(), ['createdAt', 'id', 'label', 'secret']);
      assert.equal(a.body.label, '');
      assert.notEqual(a.body.secret, b.secret);
    });

    test('only the sha256 of the secret is stored', async () => {
      const k = await mint(h(), { label: 'stored' });
      const rows = await h().db.query('SELECT * FROM api_keys WHERE id = $1', [k.id]);
      assert.equal(rows[0].secret_hash, createHash('sha256').update(k.secret).digest('hex'));
      assert.ok(!JSON.stringify(rows).includes(k.secret));
    });

    const badBodies: Array<[string, unknown, RegExp]> = [
      ['a label over 200 characters', { label: 'x'.repeat(201) }, /^label /],
      ['a label that is not a string', { label: 7 }, /^label /],
      ['rateLimitMax 0', { rateLimitMax: 0 }, /^rateLimitMax /],
      ['a fractional rateLimitMax', { rateLimitMax: 1.5 }, /^rateLimitMax /],
      ['rateLimitMax as a string', { rateLimitMax: '3' }, /^rateLimitMax /],
      ['an unknown field', { label: 'x', scope: 'all' }, /^scope is not a known field/],
      ['an array body', [], /JSON object|expected an object/],
      ['invalid JSON', '{"label":', /not valid JSON/],
    ];
    for (const [what, body, msg] of badBodies) {
      test(`minting with ${what} is 400 bad_request naming the field`, async () => {
        const res = await h().req('POST', '/v1/admin/keys', body, bearer(ROOT));
        assert.match(expectError(res, 400, 'bad_request'), msg);
      });
    }

    test('a minted key is accepted as a bearer credential on key routes', async () => {
      const k = await mint(h());
      const res = await h().req('POST', '/v1/agents', { label: 'by minted key' }, bearer(k.secret));
      assert.equal(res.status, 201, res.text);
    });

    test('the listing shows minted keys oldest first, never a secret or a hash, and not the root key', async () => {
      const k = await mint(h(), { label: 'listed', rateLimitMax: 9 });
      const res = await h().req('GET', '/v1/admin/keys', undefined, bearer(ROOT));
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body), ['keys']);
      assert.ok(!res.text.includes(k.secret), 'the secret appears in the listing');
      assert.ok(!res.text.includes(createHash('sha256').update(k.secret).digest('hex')), 'the hash appears in the listing');
      assert.ok(!res.text.includes(ROOT));
      assert.ok(res.body.keys.every((r: { id: string }) => KEY_ID.test(r.id)));
      const mine = res.body.keys.find((r: { id: string }) => r.id === k.id);
      assert.deepEqual(mine, { id: k.id, label: 'listed', createdAt: k.createdAt, rateLimitMax: 9 });
      const created = res.body.keys.map((r: { createdAt: string }) => r.createdAt);
      assert.deepEqual(created, [...created].sort());
    });

    test('revocation takes effect on the very next request, and the key stays listed with revokedAt', async () => {
      const k = await mint(h(), { label: 'to revoke' });
      assert.equal((await h().req('GET', '/v1/escrows', undefined, bearer(k.secret))).status, 200);
      const del = await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      assert.equal(del.status, 200, del.text);
      assert.deepEqual(Object.keys(del.body).sort(), ['createdAt', 'id', 'label', 'revokedAt']);
      expectError(await h().req('GET', '/v1/escrows', undefined, bearer(k.secret)), 401, 'unauthorized');
      const list = await h().req('GET', '/v1/admin/keys', undefined, bearer(ROOT));
      assert.deepEqual(
        list.body.keys.find((r: { id: string }) => r.id === k.id),
        del.body,
      );
    });

    test('revoking again is idempotent and keeps the first revokedAt', async () => {
      const k = await mint(h());
      const first = await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      await new Promise((r) => setTimeout(r, 5));
      const second = await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, first.body);
    });

    test('a revoked key and an unknown key get identical 401 bodies', async () => {
      const k = await mint(h());
      await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      const revoked = await h().req('GET', '/v1/escrows', undefined, bearer(k.secret));
      const unknown = await h().req('GET', '/v1/escrows', undefined, bearer(`esk_${'B'.repeat(43)}`));
      const wrong = await h().req('GET', '/v1/escrows', undefined, bearer('not-a-key-at-all-1234'));
      assert.equal(revoked.status, 401);
      assert.equal(unknown.status, 401);
      assert.equal(revoked.text, unknown.text);
      assert.equal(wrong.text, unknown.text);
      assert.notEqual(revoked.headers.get('x-request-id'), unknown.headers.get('x-request-id'));
    });

    const badDeletes: Array<[string, string, number, string]> = [
      ['the id root', 'root', 403, 'forbidden'],
      ['an unknown key id', 'key_01hzzzzzzzzzzzzzzzzzzzzzzz', 404, 'not_found'],
      ['an id of another kind', 'esc_01hzzzzzzzzzzzzzzzzzzzzzzz', 404, 'not_found'],
    ];
    for (const [what, id, status, code] of badDeletes) {
      test(`DELETE /v1/admin/keys with ${what} is ${status} ${code}`, async () => {
        expectError(await h().req('DELETE', `/v1/admin/keys/${id}`, undefined, bearer(ROOT)), status, code);
      });
    }

    test('the root key keeps working after every minted key is revoked', async () => {
      const list = await h().req('GET', '/v1/admin/keys', undefined, bearer(ROOT));
      for (const k of list.body.keys) await h().req('DELETE', `/v1/admin/keys/${k.id}`, undefined, bearer(ROOT));
      assert.equal((await h().req('GET', '/v1/escrows', undefined, bearer(ROOT))).status, 200);
    });
  },
  { ...HOSTED, PUBLIC_RATE_LIMIT_MAX: '100000' },
);
