// The sender's fair share: one key's URLs together hold at most WEBHOOK_KEY_MAX_IN_FLIGHT deliveries
// (in flight or queued), however many URLs it has and however long they hang, and another key's
// healthy receiver is served meanwhile (docs/security.md "Webhook fairness").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStores } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { HOSTED, mint, withKey } from '../admin/helpers.ts';
import { startWebhookSender } from '../../src/jobs/webhooks.ts';
import { eventsOf, receiver, waitFor } from './helpers.ts';

const SHARE = 4;
/** The within-key case: five URLs of one key share 10 places, so each has 2 of its own (WEBHOOK_CONCURRENCY). */
const KEY_SHARE = 10;

describeStores(
  'webhook fair share per key',
  (h) => {
    test("a key with 4 hanging URLs (2 requests each allowed) holds only its share; another key's receiver gets every event promptly", async () => {
      const a = withKey(h(), (await mint(h(), { label: 'hanging' })).secret);
      const b = withKey(h(), (await mint(h(), { label: 'healthy' })).secret);
      const dead = await receiver(() => 'hang');
      const good = await receiver(() => 200);
      try {
        for (let i = 0; i < 4; i++) assert.equal((await a.req('POST', '/v1/webhooks', { url: `${dead.url}?n=${i}` })).status, 201);
        assert.equal((await b.req('POST', '/v1/webhooks', { url: good.url })).status, 201);
        await settled(a);
        await settled(a);
        const mine = await settled(b);
        const want = (await eventsOf(b, mine.id)).length;
        const started = Date.now();
        const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 20 });
        try {
          await waitFor(() => good.got.length >= want, 'the healthy receiver got every event', 10_000);
          const took = Date.now() - started;
          // Its events all went out while the hanging key's first requests were still open (they
          // time out after 5 s): it never waited for a hanging request to give its place back.
          assert.ok(took < 5_000, `the healthy receiver waited ${took} ms`);
          assert.ok(dead.seen <= SHARE, `${dead.seen} requests reached the hanging URLs before the healthy receiver was done`);
          await waitFor(() => dead.open >= SHARE, 'the hanging key used its share', 5_000);
          assert.equal(
            dead.maxOpen,
            SHARE,
            `the hanging key's URLs had ${dead.maxOpen} requests open at once; its share is ${SHARE} (without it: 4 URLs x 2)`,
          );
        } finally {
          await sender.stop();
        }
      } finally {
        await dead.close();
        await good.close();
      }
    });
  },
  {
    ...HOSTED,
    WEBHOOK_ALLOW_PRIVATE: 'on',
    WEBHOOK_CONCURRENCY: '2',
    WEBHOOK_KEY_MAX_IN_FLIGHT: String(SHARE),
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_BACKOFF_MS: '1,1',
  },
);

describeStores(
  'webhook fairness per URL within a key',
  (h) => {
    test("a key's 4 hanging URLs, holding its whole share, do not delay a new event to its healthy URL", async () => {
      const a = withKey(h(), (await mint(h(), { label: 'mixed' })).secret);
      const dead = await receiver(() => 'hang');
      const good = await receiver(() => 200);
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 20 });
      try {
        for (let i = 0; i < 4; i++) assert.equal((await a.req('POST', '/v1/webhooks', { url: `${dead.url}?n=${i}` })).status, 201);
        // Enough events that the hanging URLs fill the key's share (10) with rows in flight and queued.
        for (let i = 0; i < 3; i++) await settled(a);
        await waitFor(() => dead.open >= 8, 'the hanging URLs have their requests open', 5_000);
        assert.equal((await a.req('POST', '/v1/webhooks', { url: good.url })).status, 201);
        const started = Date.now();
        const mine = await settled(a);
        const want = (await eventsOf(a, mine.id)).length;
        await waitFor(() => good.got.length >= want, 'the healthy URL got every event of the new escrow', 10_000);
        const took = Date.now() - started;
        // The hanging requests time out after 5 s: the healthy URL never waited for one of them.
        assert.ok(took < 3_000, `the healthy URL of the same key waited ${took} ms`);
        assert.ok(dead.maxOpen <= KEY_SHARE, `the key's hanging URLs had ${dead.maxOpen} requests open; its share is ${KEY_SHARE}`);
      } finally {
        await sender.stop();
        await dead.close();
        await good.close();
      }
    });
  },
  {
    ...HOSTED,
    WEBHOOK_ALLOW_PRIVATE: 'on',
    WEBHOOK_CONCURRENCY: '2',
    WEBHOOK_KEY_MAX_IN_FLIGHT: String(KEY_SHARE),
    WEBHOOK_TIMEOUT_MS: '5000',
    WEBHOOK_BACKOFF_MS: '1,1',
  },
);
