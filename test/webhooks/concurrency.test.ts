// Concurrent delivery: up to WEBHOOK_CONCURRENCY requests in flight per URL, many URLs at once, and a
// slow URL's backlog never delaying another URL (issue 16 item 4). Counted at real receivers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { startWebhookSender } from '../../src/jobs/webhooks.ts';
import { eventsOf, inTrailOrder, pending, receiver, register, sleep, unregister, waitFor } from './helpers.ts';

const ENV = { WEBHOOK_BACKOFF_MS: '20,20,20,20', WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_CONCURRENCY: '3' };

describeStores('webhook concurrency', (h) => {
  test('a receiver never has more than WEBHOOK_CONCURRENCY (3) requests open, and gets that many at once', async () => {
    const rx = await receiver(async () => {
      await sleep(40);
      return 200;
    });
    try {
      await register(h(), rx.url);
      // Queue the events first, so the sender finds a backlog of 20 for one URL.
      const ids = (await Promise.all([settled(h()), settled(h()), settled(h()), settled(h())])).map((s) => s.id);
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
      try {
        await waitFor(async () => (await pending(h().app.svc)) === 0, 'the outbox to drain');
      } finally {
        await sender.stop();
      }
      assert.equal(rx.maxOpen, 3, `at most 3 open at once, and the cap was reached (max ${rx.maxOpen})`);
      assert.equal(rx.got.length, 20);
      const byId = new Set(rx.got.map((g) => g.headers['webhook-id']));
      assert.equal(byId.size, 20, 'each event once');
      for (const id of ids) {
        assert.deepEqual(inTrailOrder(rx.got).map((g) => JSON.parse(g.body)).filter((e) => e.escrowId === id), await eventsOf(h(), id));
      }
    } finally {
      await unregister(h(), rx.url);
      await rx.close();
    }
  });

  test('a URL whose requests hang, with a backlog past its cap, does not delay a fast URL: it gets all 20 events before the first timeout', async () => {
    const stuck = await receiver(() => 'hang');
    const fast = await receiver();
    const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
    try {
      await register(h(), stuck.url, fast.url);
      const started = Date.now();
      await Promise.all([settled(h()), settled(h()), settled(h()), settled(h())]);
      await waitFor(() => fast.got.length === 20, 'the fast receiver to get every event', 10_000);
      const took = Date.now() - started;
      assert.ok(took < 3000, `the fast receiver had all 20 events in ${took} ms, before any request to the stuck one timed out`);
      assert.equal(stuck.seen, 3, 'the stuck receiver holds exactly its 3 slots, its other 17 events wait');
      assert.equal(stuck.maxOpen, 3);
      assert.equal(new Set(fast.got.map((g) => g.headers['webhook-id'])).size, 20);
    } finally {
      await unregister(h(), stuck.url, fast.url);
      await sender.stop();
      await stuck.close();
      await fast.close();
    }
  });

  test('many URLs at once: 12 receivers each get every event, each with at most 3 open', async () => {
    const rxs = await Promise.all(Array.from({ length: 12 }, () => receiver(async () => {
      await sleep(5);
      return 200;
    })));
    const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
    try {
      await register(h(), ...rxs.map((r) => r.url));
      await Promise.all([settled(h()), settled(h())]);
      await waitFor(() => rxs.every((r) => r.got.length === 10), 'every receiver to get all 10 events', 15_000);
      for (const r of rxs) {
        assert.ok(r.maxOpen <= 3, `${r.url}: ${r.maxOpen} open at once`);
        assert.equal(new Set(r.got.map((g) => g.headers['webhook-id'])).size, 10);
      }
    } finally {
      await unregister(h(), ...rxs.map((r) => r.url));
      await sender.stop();
      for (const r of rxs) await r.close();
    }
  });
}, ENV);
