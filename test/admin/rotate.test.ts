// Issuer key rotation: new proofs use the new key, old proofs keep verifying by their era (docs/protocol.md §18.6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { bearer, HOSTED, ROOT, withKey } from './helpers.ts';

describeStores(
  'issuer key rotation',
  (h) => {
    test('a rotation retires the signing key, proofs it signed keep verifying, and new proofs use the new key', async () => {
      const root = withKey(h(), ROOT);
      const before = await settled(root);
      const oldKey = (await root.req('GET', '/health')).body.issuer;
      assert.equal(before.proof.signature.signer, oldKey);

      const rot = await root.req('POST', '/v1/admin/issuer/rotate');
      assert.equal(rot.status, 201, rot.text);
      assert.deepEqual(Object.keys(rot.body).sort(), ['active', 'retired']);
      const { active, retired } = rot.body;
      assert.equal(retired.publicKey, oldKey);
      assert.notEqual(active.publicKey, oldKey);
      assert.match(active.keyId, /^iss_[0-9a-f]{16}$/);
      assert.equal(active.validUntil, undefined);
      assert.equal(typeof retired.validUntil, 'string');
      assert.ok(Date.parse(retired.validUntil) <= Date.parse(active.validFrom));

      const old = await root.req('GET', `/v1/proofs/${before.proof.id}/verify`);
      assert.deepEqual(old.body, {
        proofId: before.proof.id,
        signatureValid: true,
        trailIntact: true,
        trailHeadMatches: true,
        issuer: oldKey,
      });

      const after = await settled(root);
      assert.equal(after.proof.signature.signer, active.publicKey);
      const fresh = await root.req('GET', `/v1/proofs/${after.proof.id}/verify`);
      assert.equal(fresh.body.signatureValid, true);
      assert.equal(fresh.body.issuer, active.publicKey);

      const doc = await h().req('GET', '/.well-known/proof-issuer.json');
      // The document adds each key's C2SP vkey (test/client/vkey.test.ts checks it) to the eras rotation returns.
      assert.deepEqual(
        doc.body.keys.slice(-2).map(({ vkey: _vkey, ...k }: { vkey: string }) => k),
        [retired, active],
      );
      assert.equal((await root.req('GET', '/health')).body.issuer, active.publicKey);
    });

    test('POST /v1/verify recognises a proof signed before the rotation by its retired era', async () => {
      const root = withKey(h(), ROOT);
      const { proof } = await settled(root);
      const rot = await root.req('POST', '/v1/admin/issuer/rotate', {});
      assert.equal(rot.status, 201);
      const res = await h().req('POST', '/v1/verify', proof);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.valid, true);
      assert.equal(res.body.keyId, rot.body.retired.keyId);
      assert.equal(res.body.validUntil, rot.body.retired.validUntil);
    });

    test('the signed log head moves to the new key after a rotation', async () => {
      const rot = await h().req('POST', '/v1/admin/issuer/rotate', undefined, bearer(ROOT));
      const head = await h().req('GET', '/v1/log/head');
      assert.equal(head.status, 200, head.text);
      assert.equal(head.body.keyId, rot.body.active.keyId);
    });

    test('every era is listed oldest first, each retired one with validUntil, the last one active', async () => {
      const { keys } = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.ok(keys.length >= 4);
      assert.ok(keys.slice(0, -1).every((k: { validUntil?: string }) => typeof k.validUntil === 'string'));
      assert.equal(keys.at(-1).validUntil, undefined);
      const from = keys.map((k: { validFrom: string }) => Date.parse(k.validFrom));
      assert.deepEqual(
        from,
        [...from].sort((a, b) => a - b),
      );
    });

    test('a rotation request with body fields is 400 and rotates nothing', async () => {
      const n = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys.length;
      assert.match(
        expectError(await h().req('POST', '/v1/admin/issuer/rotate', { force: true }, bearer(ROOT)), 400, 'bad_request'),
        /^force is not a known field/,
      );
      assert.equal((await h().req('GET', '/.well-known/proof-issuer.json')).body.keys.length, n);
    });

    test('two concurrent rotations both succeed and leave exactly one active key', async () => {
      const [a, b] = await Promise.all([1, 2].map(() => h().req('POST', '/v1/admin/issuer/rotate', undefined, bearer(ROOT))));
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      const { keys } = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.equal(keys.filter((k: { validUntil?: string }) => k.validUntil === undefined).length, 1);
    });
  },
  { ...HOSTED, PUBLIC_RATE_LIMIT_MAX: '100000' },
);
