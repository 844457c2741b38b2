// Webhook key rotation (docs/keys.md "Webhook key rotation"): POST /v1/admin/webhooks/rotate-key
// makes a new key sign every delivery; for WEBHOOK_KEY_OVERLAP_SECONDS the old key signs beside it
// (a v1a entry each in webhook-signature), x-proof-signature is the new key's, and every era stays in
// the issuer document. Checked with the standardwebhooks package (v1, the endpoint's whsec_ secret,
// which a rotation leaves alone: the package checks only v1) and each v1a entry with OpenSSL through
// node:crypto against the old and the new whpk_ key, and with the client module pinned to either.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify as osslVerify } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { bearer, HOSTED, ROOT, withKey } from '../admin/helpers.ts';
import { parseConfig } from '../../src/config.ts';
import { formatNoteKey } from '../../src/crypto/keyText.ts';
import { NOT_USABLE } from '../../src/node/keyFiles.ts';
import { nodeKeySources } from '../../src/node/serviceKeys.ts';
import { formatPublicKey } from '../../src/webhooks/standard.ts';
import { drain, receiver, unregister, type Received } from './helpers.ts';

const ORIGIN = parseConfig({}).logOrigin;
const dir = mkdtempSync(join(tmpdir(), 'webhook-rotate-'));
let seq = 0;
const ENV = { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_BACKOFF_MS: '20,20,20,20', WEBHOOK_TIMEOUT_MS: '2000' };

/** A new key file (0600), named for its use: its source. */
function keyFile(name = 'escrow-settlement-webhook'): string {
  const path = join(dir, `key-${seq++}.key`);
  writeFileSync(path, formatNoteKey(name, crypto.getRandomValues(new Uint8Array(32))), { mode: 0o600 });
  chmodSync(path, 0o600);
  return `file:${path}`;
}

const ossl = (hex: string) =>
  createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(hex, 'hex').toString('base64url') }, format: 'jwk' });

/** The v1a entries of a delivery that verify under the key (hex), by OpenSSL. */
function v1aBy(g: Received, hex: string): number {
  const content = Buffer.from(`${g.headers['webhook-id']}.${g.headers['webhook-timestamp']}.${g.body}`);
  return g.headers['webhook-signature']
    .split(' ')
    .filter((e) => e.startsWith('v1a,'))
    .filter((e) => osslVerify(null, content, ossl(hex), Buffer.from(e.slice(4), 'base64'))).length;
}

const onlyV1a = (g: Received) => ({
  ...g.headers,
  'webhook-signature': g.headers['webhook-signature']
    .split(' ')
    .filter((e) => e.startsWith('v1a,'))
    .join(' '),
});

const rotate = (h: Harness, body?: unknown) => h.req('POST', '/v1/admin/webhooks/rotate-key', body, bearer(ROOT));
const signingKey = async (h: Harness) => (await withKey(h, ROOT).req('GET', '/v1/webhooks')).body.signingKey as string;

describeStores(
  'webhook key rotation',
  (h) => {
    test('during the overlap every delivery is signed by the old and the new key; x-proof-signature is the new one; both eras are published', async () => {
      const root = withKey(h(), ROOT);
      const rx = await receiver();
      try {
        const reg = await root.req('POST', '/v1/webhooks', { url: rx.url });
        assert.equal(reg.status, 201, reg.text);
        const secret = reg.body.standardWebhooks.secret;
        const oldKey = reg.body.signingKey;

        const rot = await rotate(h(), { key: keyFile() });
        assert.equal(rot.status, 201, rot.text);
        assert.deepEqual(Object.keys(rot.body).sort(), ['active', 'overlapUntil', 'retired']);
        const { active, retired, overlapUntil } = rot.body;
        assert.equal(retired.publicKey, oldKey);
        assert.notEqual(active.publicKey, oldKey);
        assert.match(active.keyId, /^whk_[0-9a-f]{16}$/);
        assert.equal(Date.parse(overlapUntil) - Date.parse(retired.validUntil), 3600 * 1000);
        const newKey = active.publicKey;
        assert.equal(await signingKey(h()), newKey, 'registrations now pin the new key');
        assert.equal((await root.req('POST', '/v1/webhooks', { url: rx.url })).body.standardWebhooks.publicKey, formatPublicKey(newKey));
        const doc = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
        assert.deepEqual(doc.webhookKeys.slice(-2), [retired, active], 'every webhook era is in the issuer document');

        await settled(root);
        await drain(h().app.svc);
        assert.ok(rx.got.length >= 4);
        const byPackage = new Webhook(secret);
        for (const g of rx.got) {
          assert.match(g.headers['webhook-signature'], /^v1,\S+ v1a,\S+ v1a,\S+$/, 'v1, then v1a by the new key and by the old');
          assert.ok(byPackage.verify(g.body, g.headers), 'the standardwebhooks package verifies it');
          assert.equal(v1aBy(g, newKey), 1, 'one v1a entry by the new key');
          assert.equal(v1aBy(g, oldKey), 1, 'one v1a entry by the old key');
          // A receiver pinned to either key accepts the delivery by its v1a entries.
          assert.equal(verifyWebhook(g.body, onlyV1a(g), formatPublicKey(oldKey)).ok, true);
          assert.equal(verifyWebhook(g.body, onlyV1a(g), formatPublicKey(newKey)).ok, true);
          assert.equal(g.headers['x-proof-key-id'], newKey);
          assert.ok(
            osslVerify(null, Buffer.from(g.body), ossl(newKey), Buffer.from(g.headers['x-proof-signature'], 'hex')),
            'x-proof-signature is by the new key',
          );
        }
      } finally {
        await unregister(withKey(h(), ROOT), rx.url);
        await rx.close();
      }
    });

    test('the issuer and webhook keys must differ: a rotation of either to the other key is 409 and changes nothing', async () => {
      const issuerFile = keyFile(ORIGIN);
      assert.equal((await h().req('POST', '/v1/admin/issuer/rotate', { key: issuerFile }, bearer(ROOT))).status, 201);
      const before = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.match(expectError(await rotate(h(), { key: issuerFile }), 409, 'invalid_state'), /the issuer and webhook keys must differ/);
      const webhookFile = keyFile(ORIGIN);
      assert.equal((await rotate(h(), { key: webhookFile })).status, 201);
      const mid = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.deepEqual(mid.keys, before.keys);
      assert.match(
        expectError(await h().req('POST', '/v1/admin/issuer/rotate', { key: webhookFile }, bearer(ROOT)), 409, 'invalid_state'),
        /^key: that key is the webhook key of this service \(whk_[0-9a-f]{16}\): the issuer and webhook keys must differ/,
      );
      assert.match(expectError(await rotate(h(), { key: webhookFile }), 409, 'invalid_state'), /already an era of this service/);
      assert.deepEqual((await h().req('GET', '/.well-known/proof-issuer.json')).body, mid);
    });

    test('a rotation without a key (named keys), to an unusable file, or with other fields is 400 and changes nothing', async () => {
      const before = (await h().req('GET', '/.well-known/proof-issuer.json')).body;
      assert.match(
        expectError(await rotate(h(), {}), 400, 'bad_request'),
        /key is required: this service signs with named keys \(WEBHOOK_KEY\)/,
      );
      const open = keyFile();
      chmodSync(open.slice(5), 0o644);
      for (const key of [open, `file:${join(dir, 'absent')}`, 'file:/etc/passwd'])
        assert.equal(expectError(await rotate(h(), { key }), 400, 'bad_request'), `key: ${key.slice(5)} ${NOT_USABLE}`);
      assert.match(expectError(await rotate(h(), { key: keyFile(), force: true }), 400, 'bad_request'), /force/);
      assert.equal(
        expectError(await h().req('POST', '/v1/admin/webhooks/rotate-key', { key: keyFile() }), 401, 'unauthorized').length > 0,
        true,
      );
      assert.deepEqual((await h().req('GET', '/.well-known/proof-issuer.json')).body, before);
    });
  },
  { ...ENV, WEBHOOK_KEY_OVERLAP_SECONDS: '3600' },
  { keySources: nodeKeySources({ logOrigin: ORIGIN }) },
);

describeStores(
  'webhook key rotation without an overlap, on generated keys',
  (h) => {
    test('a sandbox rotates without a key (generated into DATA_DIR/keys/); with no overlap only the new key signs, an event signed before is signed again', async () => {
      const root = withKey(h(), ROOT);
      let status = 500;
      const rx = await receiver(() => status);
      try {
        assert.equal((await root.req('POST', '/v1/webhooks', { url: rx.url })).status, 201);
        const oldKey = await signingKey(h());
        const { id } = await settled(root);
        // The first attempts fail: their x-proof signatures, by the old key, are stored.
        const svc = h().app.svc;
        const { sendDueOnce } = await import('../../src/jobs/webhooks.ts');
        await sendDueOnce(svc);
        await sendDueOnce(svc);
        assert.ok(rx.got.length > 0 && rx.got.every((g) => g.headers['x-proof-key-id'] === oldKey));

        const rot = await rotate(h());
        assert.equal(rot.status, 201, rot.text);
        const newKey = rot.body.active.publicKey;
        assert.equal(rot.body.overlapUntil, rot.body.retired.validUntil);
        const path = join(dir, 'sandbox', 'keys', `webhook-${rot.body.active.keyId}.key`);
        assert.ok(existsSync(path));
        assert.equal(statSync(path).mode & 0o777, 0o600);

        status = 200;
        rx.got.length = 0;
        await drain(svc);
        assert.ok(rx.got.length >= 4);
        for (const g of rx.got) {
          assert.equal(g.headers['x-proof-key-id'], newKey, `${g.headers['webhook-id']} is signed by the new key`);
          assert.ok(osslVerify(null, Buffer.from(g.body), ossl(newKey), Buffer.from(g.headers['x-proof-signature'], 'hex')));
          assert.match(g.headers['webhook-signature'], /^v1,\S+ v1a,\S+$/, 'the old key signs no more');
          assert.equal(v1aBy(g, newKey), 1);
          assert.equal(v1aBy(g, oldKey), 0);
        }
        assert.ok(rx.got.some((g) => g.headers['webhook-id'].startsWith(`${id}_`)));
      } finally {
        await unregister(root, rx.url);
        await rx.close();
      }
    });
  },
  { ...ENV, WEBHOOK_KEY_OVERLAP_SECONDS: '0' },
  { keySources: nodeKeySources({ generateInto: join(dir, 'sandbox'), logOrigin: ORIGIN }) },
);
