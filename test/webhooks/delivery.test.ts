// Webhook delivery end to end on each store: signatures, ordering by webhook-id, retries, dead letters, redelivery, slow receivers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { escrow, failedDelivery, settled } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { webhookMetrics } from '../../src/webhooks/metrics.ts';
import { startWebhookSender } from '../../src/jobs/webhooks.ts';
import { drain, eventsOf, inTrailOrder, pending, receiver, register, sleep, unregister, waitFor } from './helpers.ts';

// A long timeout: on a starved machine a quick answer must not time out and be retried (a duplicate).
const ENV = { WEBHOOK_BACKOFF_MS: '20,20,20,20', WEBHOOK_TIMEOUT_MS: '10000' };
const withoutStandard = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => !k.startsWith('webhook-')));

describeStores(
  'webhook delivery',
  (h) => {
    test('a good receiver gets every event of two lifecycles once; ordered by webhook-id they equal the events replay, each verifying with the pinned key', async () => {
      const rx = await receiver();
      try {
        const key = await register(h(), rx.url);
        const before = await webhookMetrics(h().db);
        const a = await settled(h());
        const b = await failedDelivery(h());
        assert.equal((await h().req('POST', `/v1/escrows/${b.id}/refund`)).status, 200);
        await drain(h().app.svc);
        const expected = [a.id, b.id].sort();
        const events = [...(await eventsOf(h(), expected[0])), ...(await eventsOf(h(), expected[1]))];
        assert.equal(rx.got.length, events.length);
        const ordered = inTrailOrder(rx.got);
        assert.deepEqual(
          ordered.map((g) => JSON.parse(g.body)),
          events,
          'every event once; by webhook-id, in trail order, equal to GET .../events',
        );
        for (const [i, g] of ordered.entries()) {
          assert.equal(g.body, canonicalize(events[i]), 'the body is the RFC 8785 form of the replayed event');
          assert.equal(g.headers['content-type'], 'application/json');
          assert.equal(g.headers['x-proof-key-id'], key);
          const idx = events.slice(0, i).filter((e) => e.escrowId === events[i].escrowId).length;
          assert.equal(g.headers['webhook-id'], `${events[i].escrowId}_${idx}`);
          assert.match(g.headers['webhook-id'], /^[A-Za-z0-9_-]+$/, 'Standard Webhooks id alphabet');
          const std = verifyWebhook(g.body, g.headers, key);
          assert.deepEqual(std, { ok: true, style: 'standard', event: events[i] });
          assert.equal(verifyWebhook(g.body, withoutStandard(g.headers), key).style, 'x-proof');
          assert.equal(verifyWebhook(g.body, withoutStandard(g.headers), key).ok, true);
        }
        const after = await webhookMetrics(h().db);
        assert.equal(after.delivered - before.delivered, events.length);
        assert.equal(after.pending, 0);
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });

    test('each event is signed once, whatever the number of URLs and attempts', async () => {
      const one = await receiver();
      const two = await receiver((n) => (n === 0 ? 500 : 200));
      try {
        await register(h(), one.url, two.url);
        const s = await settled(h());
        await drain(h().app.svc);
        assert.equal(one.got.length, 5);
        assert.equal(two.got.length, 6);
        const [{ n }] = await h().db.query('SELECT count(*)::int AS n FROM event_signatures WHERE escrow_id = $1', [s.id]);
        assert.equal(n, 5);
        const sigs = (got: typeof one.got) => new Map(got.map((g) => [g.headers['webhook-id'], g.headers['x-proof-signature']]));
        assert.deepEqual(sigs(two.got), sigs(one.got), 'the same x-proof signature per event at both URLs, on every attempt');
        assert.equal(new Set(two.got.map((g) => g.headers['x-proof-signature'])).size, 5);
      } finally {
        await unregister(h(), one.url, two.url);
        await one.close();
        await two.close();
      }
    });

    test('a receiver answering 500 gets exactly 5 byte-identical attempts, then one dead letter; redelivery brings the event back', async () => {
      const rx = await receiver(() => 500);
      try {
        await register(h(), rx.url);
        const before = await webhookMetrics(h().db);
        const e = await escrow(h());
        await drain(h().app.svc);
        assert.equal(rx.got.length, 5);
        assert.equal(new Set(rx.got.map((g) => g.body)).size, 1, 'byte-identical bodies');
        assert.equal(new Set(rx.got.map((g) => g.headers['x-proof-signature'])).size, 1);
        assert.equal(new Set(rx.got.map((g) => g.headers['webhook-id'])).size, 1);
        const [event] = await eventsOf(h(), e.id);
        const list = (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.filter((d: any) => d.url === rx.url);
        assert.equal(list.length, 1);
        const dl = list[0];
        assert.match(dl.id, /^dlr_[0-9a-hjkmnp-tv-z]{26}$/);
        assert.deepEqual(Object.keys(dl).sort(), ['attempts', 'deadAt', 'event', 'firstAttemptAt', 'id', 'lastError', 'lastStatus', 'url']);
        assert.equal(dl.attempts, 5);
        assert.equal(dl.lastStatus, 500);
        assert.equal(dl.lastError, 'HTTP 500');
        assert.deepEqual(dl.event, event);
        assert.ok(Date.parse(dl.firstAttemptAt) <= Date.parse(dl.deadAt));
        const mid = await webhookMetrics(h().db);
        assert.deepEqual(
          { failed: mid.failed - before.failed, dead: mid.deadLettered - before.deadLettered, delivered: mid.delivered - before.delivered },
          { failed: 5, dead: 1, delivered: 0 },
        );

        rx.behaviour = () => 200;
        const r = await h().req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`);
        assert.equal(r.status, 202, r.text);
        assert.deepEqual(r.body, { ok: true, id: dl.id });
        assert.equal(await pending(h().app.svc), 1);
        await drain(h().app.svc);
        assert.equal(rx.got.length, 6);
        assert.equal(rx.got[5].body, rx.got[0].body, 'the redelivered body is the same bytes');
        assert.equal(
          (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.some((d: any) => d.id === dl.id),
          false,
        );
        expectError(await h().req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`), 404, 'not_found');
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });

    test('a flaky receiver that fails twice gets the event on the third attempt and nothing is dead-lettered', async () => {
      const rx = await receiver((n) => (n < 2 ? 503 : 200));
      try {
        await register(h(), rx.url);
        const e = await escrow(h());
        await drain(h().app.svc);
        assert.equal(rx.got.length, 3);
        assert.deepEqual(JSON.parse(rx.got[2].body), (await eventsOf(h(), e.id))[0]);
        const dead = (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.filter((d: any) => d.url === rx.url);
        assert.equal(dead.length, 0);
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });

    test('a receiver that is down dead-letters with the network error and no lastStatus; the next event then goes out', async () => {
      const rx = await receiver();
      await rx.close();
      try {
        await register(h(), rx.url);
        const e = await escrow(h());
        await h().req('POST', `/v1/escrows/${e.id}/fund`);
        await drain(h().app.svc);
        const dead = (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.filter((d: any) => d.url === rx.url);
        assert.deepEqual(
          dead.map((d: any) => d.event.event).sort(),
          ['escrow.created', 'escrow.funded'],
          'both events, each dead-lettered once',
        );
        for (const d of dead) {
          assert.equal(d.lastStatus, undefined);
          assert.match(d.lastError, /ECONNREFUSED|fetch failed|connect/i);
        }
      } finally {
        await unregister(h(), rx.url);
      }
    });

    test('unregistering a URL drops its pending deliveries', async () => {
      const rx = await receiver(() => 500);
      try {
        await register(h(), rx.url);
        await escrow(h());
        assert.equal(await pending(h().app.svc), 1);
        const r = await h().req('DELETE', '/v1/webhooks', { url: rx.url });
        assert.deepEqual(r.body, { ok: true, url: rx.url });
        assert.equal(await pending(h().app.svc), 0);
        await escrow(h());
        assert.equal(await pending(h().app.svc), 0, 'no fan-out to an unregistered URL');
      } finally {
        await rx.close();
      }
    });

    test('a slow receiver (5 s per answer) does not delay a good receiver (running sender)', async () => {
      const slow = await receiver(async () => {
        await sleep(5000);
        return 200;
      });
      const good = await receiver();
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
      try {
        await register(h(), slow.url, good.url);
        const started = Date.now();
        const s = await settled(h());
        await waitFor(() => good.got.length === 5, 'the good receiver to get all five events', 10_000);
        const took = Date.now() - started;
        // A sender that waited for the slow receiver would give the good one nothing for 5 s.
        assert.ok(took < 5000, `the good receiver had every event in ${took} ms, before the slow one answered once`);
        assert.equal(slow.got.length, 0, 'no attempt at the slow receiver has finished');
        assert.ok(slow.seen <= 8, `the slow receiver has at most WEBHOOK_CONCURRENCY requests open (${slow.seen})`);
        assert.deepEqual(
          inTrailOrder(good.got).map((g) => JSON.parse(g.body)),
          await eventsOf(h(), s.id),
        );
      } finally {
        await unregister(h(), slow.url, good.url);
        await sender.stop();
        await slow.close();
        await good.close();
      }
    });

    test('events queued while the sender runs reach a receiver once each, with concurrent lifecycles interleaved', async () => {
      const rx = await receiver();
      const sender = startWebhookSender(h().app.svc, { log: () => {}, pollMs: 10 });
      try {
        await register(h(), rx.url);
        const ids = (await Promise.all([settled(h()), failedDelivery(h()), settled(h())])).map((x) => x.id);
        await waitFor(async () => (await pending(h().app.svc)) === 0, 'the outbox to drain');
        for (const id of ids) {
          const got = inTrailOrder(rx.got)
            .map((g) => JSON.parse(g.body))
            .filter((ev) => ev.escrowId === id);
          assert.deepEqual(got, await eventsOf(h(), id), `every event of ${id}, once`);
        }
      } finally {
        await sender.stop();
        await unregister(h(), rx.url);
        await rx.close();
      }
    });
  },
  ENV,
);
