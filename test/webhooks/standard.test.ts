// Standard Webhooks interop: real deliveries verified by the official `standardwebhooks` npm package
// (v1, HMAC-SHA256 with the whsec_ secret; both ways it takes a secret) and v1a (Ed25519) with
// OpenSSL through node:crypto and the whpk_ key: independent implementations, not our own code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify as osslVerify } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describeStores, makeHarness, openStoreBefore, STORES } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { drain, eventsOf, receiver, unregister, type Received } from './helpers.ts';

const ENV = { WEBHOOK_BACKOFF_MS: '20,20,20,20', WEBHOOK_TIMEOUT_MS: '2000' };

/** The v1a entries of a webhook-signature header, checked with OpenSSL against the whpk_ key. */
function v1aVerifies(g: Received, whpk: string): boolean {
  assert.match(whpk, /^whpk_/);
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(whpk.slice(5), 'base64').toString('base64url') },
    format: 'jwk',
  });
  const content = Buffer.from(`${g.headers['webhook-id']}.${g.headers['webhook-timestamp']}.${g.body}`);
  const entries = g.headers['webhook-signature'].split(' ').filter((e) => e.startsWith('v1a,'));
  assert.equal(entries.length, 1);
  return osslVerify(null, content, key, Buffer.from(entries[0].slice(4), 'base64'));
}

describeStores(
  'Standard Webhooks',
  (h) => {
    test('every delivery verifies with the standardwebhooks package (whsec_ string and raw bytes) and its v1a with the whpk_ key', async () => {
      const rx = await receiver();
      try {
        const r = await h().req('POST', '/v1/webhooks', { url: rx.url });
        assert.equal(r.status, 201, r.text);
        const { secret, publicKey } = r.body.standardWebhooks;
        assert.match(secret, /^whsec_/);
        const s = await settled(h());
        await drain(h().app.svc);
        const events = await eventsOf(h(), s.id);
        assert.equal(rx.got.length, events.length);
        const byString = new Webhook(secret);
        const byRaw = new Webhook(new Uint8Array(Buffer.from(secret.slice('whsec_'.length), 'base64')), { format: 'raw' });
        for (const g of rx.got) {
          assert.match(g.headers['webhook-id'], /^[A-Za-z0-9_-]+$/);
          assert.match(
            g.headers['webhook-signature'],
            /^v1,[A-Za-z0-9+/]+=* v1a,[A-Za-z0-9+/]+=*$/,
            'v1 and v1a, space-separated in one header',
          );
          const payload = byString.verify(g.body, g.headers);
          assert.ok(
            events.some((e) => isDeepStrictEqual(e, payload)),
            'the package returns the event',
          );
          assert.deepEqual(byRaw.verify(g.body, g.headers), payload);
          assert.equal(v1aVerifies(g, publicKey), true);
          // The client module checks both schemes too: v1 alone with the secret, v1a with the whpk_ key.
          const only = (v: string) => ({
            ...g.headers,
            'webhook-signature': g.headers['webhook-signature']
              .split(' ')
              .filter((e) => e.startsWith(`${v},`))
              .join(' '),
          });
          assert.equal(verifyWebhook(g.body, only('v1'), r.body.signingKey, { secret }).ok, true);
          assert.equal(verifyWebhook(g.body, only('v1'), r.body.signingKey).ok, false, 'v1 needs the secret');
          assert.equal(verifyWebhook(g.body, only('v1a'), publicKey).ok, true);
        }
        // And the package refuses what it must: a changed body, another secret, no v1 entry.
        const g = rx.got[0];
        assert.throws(() => byString.verify(g.body.replace('"escrow.', '"escrow.x'), g.headers), WebhookVerificationError);
        assert.throws(
          () => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(g.body, g.headers),
          WebhookVerificationError,
        );
        const v1aOnly = {
          ...g.headers,
          'webhook-signature': g.headers['webhook-signature']
            .split(' ')
            .filter((e) => e.startsWith('v1a,'))
            .join(' '),
        };
        assert.throws(() => byString.verify(g.body, v1aOnly), WebhookVerificationError);
        assert.equal(v1aVerifies({ ...g, body: g.body.replace('"escrow.', '"escrow.x') }, publicKey), false);
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });

    test('each endpoint has its own secret, shown once; unregistering and registering again makes a new one', async () => {
      const one = await receiver();
      const two = await receiver();
      try {
        const a = (await h().req('POST', '/v1/webhooks', { url: one.url })).body.standardWebhooks;
        const b = (await h().req('POST', '/v1/webhooks', { url: two.url })).body.standardWebhooks;
        assert.notEqual(a.secret, b.secret);
        assert.equal(a.publicKey, b.publicKey, 'one deployment-wide Ed25519 key');
        assert.deepEqual((await h().req('POST', '/v1/webhooks', { url: one.url })).body.standardWebhooks, { publicKey: a.publicKey });
        await settled(h());
        await drain(h().app.svc);
        for (const g of one.got) assert.ok(new Webhook(a.secret).verify(g.body, g.headers));
        for (const g of two.got) assert.throws(() => new Webhook(a.secret).verify(g.body, g.headers), WebhookVerificationError);
        await unregister(h(), one.url);
        const again = (await h().req('POST', '/v1/webhooks', { url: one.url })).body.standardWebhooks;
        assert.match(again.secret, /^whsec_/);
        assert.notEqual(again.secret, a.secret);
      } finally {
        await unregister(h(), one.url, two.url);
        await one.close();
        await two.close();
      }
    });
  },
  ENV,
);

for (const kind of STORES) {
  test(`migration 005 gives an endpoint registered before it a secret, shown by its next registration only [${kind}]`, async () => {
    const rx = await receiver();
    const store = await openStoreBefore(kind, 5);
    try {
      await store.db.query('INSERT INTO webhooks (url, created_at) VALUES ($1, now())', [rx.url]);
      await store.finish();
      const [row] = await store.db.query('SELECT secret, secret_revealed FROM webhooks WHERE url = $1', [rx.url]);
      assert.equal(Buffer.from(row.secret, 'base64').length, 32, 'a 32-byte secret');
      assert.equal(row.secret_revealed, false);
      const h = await makeHarness(kind, ENV, { db: store.db });
      const first = await h.req('POST', '/v1/webhooks', { url: rx.url });
      assert.equal(first.status, 201, first.text);
      assert.equal(first.body.standardWebhooks.secret, `whsec_${row.secret}`, 'the next registration shows the migrated secret');
      const again = await h.req('POST', '/v1/webhooks', { url: rx.url });
      assert.equal(again.body.standardWebhooks.secret, undefined, 'and only that one');
      await settled(h);
      await drain(h.app.svc);
      assert.equal(rx.got.length, 5);
      for (const g of rx.got) assert.ok(new Webhook(`whsec_${row.secret}`).verify(g.body, g.headers));
    } finally {
      await rx.close();
      await store.drop();
    }
  });
}
