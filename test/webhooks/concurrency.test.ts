// Concurrent delivery: up to WEBHOOK_CONCURRENCY requests in flight per URL, many URLs at once, and a
// slow URL's backlog never delaying another URL (docs/protocol.md §14.3). Counted at real receivers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { startWebhookSender } from '../../src/jobs/webhooks.ts';
import { webhookMetrics } from '../../src/webhooks/metrics.ts';
import { eventsOf, inTrailOrder, pending, receiver, register, sleep, unregister, waitFor } from './helpers.ts';

// A long timeout: on a starved machine a 40 ms answer must not time out and be retried (a duplicate).
const ENV = { WEBHOOK_BACKOFF_MS: '20,20,20,20', WEBHOOK_TIMEOUT_MS: '10000', WEBHOOK_CONCURRENCY: '3' };
const WAIT_MS = 60_000;

describeStores(
  'webhook concurrency',
  (h) => {
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
          await waitFor(async () => (await pending(h().app.svc)) === 0, 'the outbox to drain', WAIT_MS);
        } finally {
          await sender.stop();
        }
        assert.equal(rx.maxOpen, 3, `at most 3 open at once, and the cap was reached (max ${rx.maxOpen})`);
        assert.equal(rx.got.length, 20);
        const byId = new Set(rx.got.map((g) => g.headers['webhook-id']));
        assert.equal(byId.size, 20, 'each event once');
        for (const id of ids) {
          assert.deepEqual(
            inTrailOrder(rx.got)
              .map((g) => JSON.parse(g.body))
              .filter((e) => e.escrowId === id),
            await eventsOf(h(), id),
          );
        }
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });

    test('a URL whose requests hang, with a backlog past its cap, does not delay a fast URL: it gets all 20 events before any request to the stuck one times out', async () => {
      const stuck = await receiver(() => 'hang');
      const fast = await receiver();
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
      try {
        await register(h(), stuck.url, fast.url);
        const started = Date.now();
        await Promise.all([settled(h()), settled(h()), settled(h()), settled(h())]);
        await waitFor(() => fast.got.length === 20, 'the fast receiver to get every event', WAIT_MS);
        const took = Date.now() - started;
        assert.ok(took < 10_000, `the fast receiver had all 20 events in ${took} ms, before any request to the stuck one timed out`);
        assert.equal(stuck.seen, 3, 'the stuck receiver holds exactly its 3 slots, its other 17 events wait');
        assert.equal(stuck.maxOpen, 3);
        assert.equal(new Set(fast.got.map((g) => g.headers['webhook-id'])).size, 20);
      } finally {
        await unregister(h(), stuck.url, fast.url);
        await stuck.close(); // drops the hung requests, so stopping does not wait for their timeout
        await sender.stop();
        await fast.close();
      }
    });

    test('a URL answering 500 to everything: each of its 20 events gets exactly 5 attempts and one dead letter, counted once; a good URL gets all 20', async () => {
      const bad = await receiver(() => 500);
      const good = await receiver();
      const before = await webhookMetrics(h().db);
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
      try {
        await register(h(), bad.url, good.url);
        await Promise.all([settled(h()), settled(h()), settled(h()), settled(h())]);
        await waitFor(async () => (await pending(h().app.svc)) === 0, 'every event delivered or dead-lettered', WAIT_MS);
        assert.equal(good.got.length, 20);
        assert.equal(bad.got.length, 100);
        const attempts = new Map<string, number>();
        for (const g of bad.got) attempts.set(g.headers['webhook-id'], (attempts.get(g.headers['webhook-id']) ?? 0) + 1);
        assert.deepEqual([...new Set(attempts.values())], [5], 'five attempts per event');
        assert.equal(attempts.size, 20);
        assert.ok(bad.maxOpen <= 3);
        const dead = (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.filter((d: any) => d.url === bad.url);
        assert.equal(dead.length, 20);
        for (const d of dead) assert.deepEqual([d.attempts, d.lastStatus, d.lastError], [5, 500, 'HTTP 500']);
        const after = await webhookMetrics(h().db);
        assert.deepEqual(
          {
            delivered: after.delivered - before.delivered,
            failed: after.failed - before.failed,
            dead: after.deadLettered - before.deadLettered,
          },
          { delivered: 20, failed: 100, dead: 20 },
        );
      } finally {
        await unregister(h(), bad.url, good.url);
        await sender.stop();
        await bad.close();
        await good.close();
      }
    });

    test('many URLs at once: 12 receivers each get every event, each with at most 3 open', async () => {
      const rxs = await Promise.all(
        Array.from({ length: 12 }, () =>
          receiver(async () => {
            await sleep(5);
            return 200;
          }),
        ),
      );
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
      try {
        await register(h(), ...rxs.map((r) => r.url));
        await Promise.all([settled(h()), settled(h())]);
        await waitFor(() => rxs.every((r) => r.got.length === 10), 'every receiver to get all 10 events', WAIT_MS);
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
  },
  ENV,
);

describeStores(
  'webhook leases',
  (h) => {
    test('a queued row whose lease runs too low is handed back unsent: its claim is not counted as an attempt', async () => {
      // One request at a time (WEBHOOK_CONCURRENCY 1) to a URL that never answers (2.5 s timeout).
      // The five rows are claimed together with a lease of timeout + 5 s, so each must start within 4 s
      // of the claim: #0 starts at 0 s, #1 at 2.5 s, and at 5 s #2..#4 are too late and go back to the
      // outbox with their attempt undone; #2 is then claimed again and sent. At 5.8 s, #3 and #4 are
      // unsent, unleased and at 0 attempts (without the hand-back they would sit leased at 1).
      const perId = new Map<string, number>();
      const rx = await receiver((_n, req) => {
        perId.set(req.headers['webhook-id'], (perId.get(req.headers['webhook-id']) ?? 0) + 1);
        return 'hang';
      });
      try {
        await register(h(), rx.url);
        const s = await settled(h());
        const rowsNow = () =>
          h().db.query<{ idx: number; attempts: number; leased: boolean }>(
            'SELECT idx, attempts, lease_until IS NOT NULL AS leased FROM outbox WHERE escrow_id = $1 ORDER BY idx',
            [s.id],
          );
        const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 20 });
        try {
          await sleep(5_800);
          const mid = await rowsNow();
          assert.deepEqual(
            mid.map((r) => [r.idx, r.attempts, r.leased]),
            [
              [0, 1, false],
              [1, 1, false],
              [2, 1, true],
              [3, 0, false],
              [4, 0, false],
            ],
          );
        } finally {
          await sender.stop();
        }
        for (const r of await rowsNow()) {
          assert.equal(r.attempts, perId.get(`${s.id}_${r.idx}`) ?? 0, `event ${r.idx}: attempts recorded = requests the receiver got`);
        }
        assert.ok(
          [...perId.values()].every((n) => n === 1),
          'no event was sent twice',
        );
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });
  },
  { WEBHOOK_BACKOFF_MS: '60000', WEBHOOK_TIMEOUT_MS: '2500', WEBHOOK_CONCURRENCY: '1' },
);
