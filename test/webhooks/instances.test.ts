// Several sender instances on one real Postgres schema, as several processes would be.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PG_URL, twoInstances, type Harness } from '../harness.ts';
import { failedDelivery, settled } from '../fixtures.ts';
import { sendDueOnce, startWebhookSender } from '../../src/jobs/webhooks.ts';
import { webhookMetrics } from '../../src/webhooks/metrics.ts';
import type { Services } from '../../src/services.ts';
import { eventsOf, inTrailOrder, pending, receiver, register, sleep, waitFor, type Receiver } from './helpers.ts';

const ENV = { WEBHOOK_BACKOFF_MS: '20,20,20,20', WEBHOOK_TIMEOUT_MS: '2000' };
const skip = !PG_URL && 'needs TEST_DATABASE_URL';

/** A receiver that answers after a random 0-3 ms, so the instances' claims interleave. */
const jittery = () =>
  receiver(async () => {
    await sleep(Math.floor(Math.random() * 4));
    return 200;
  });

const pairOf = (tag: string, env: Record<string, string> = ENV) => twoInstances(`wh_${tag}`, env);

/** Every receiver got each event of each escrow exactly once (no attempt sent twice). */
async function assertExactlyOnce(h: Harness, receivers: Receiver[], ids: string[]) {
  for (const rx of receivers) {
    const webhookIds = rx.got.map((g) => g.headers['webhook-id']);
    assert.equal(new Set(webhookIds).size, webhookIds.length, `no duplicate deliveries to ${rx.url}`);
    for (const id of ids) {
      const got = inTrailOrder(rx.got)
        .map((g) => JSON.parse(g.body))
        .filter((e) => e.escrowId === id);
      assert.deepEqual(got, await eventsOf(h, id), `${rx.url} got every event of ${id} once`);
    }
  }
}

async function lifecycles(a: Harness, b: typeof a, n: number): Promise<string[]> {
  const made = await Promise.all(Array.from({ length: n }, (_, i) => (i % 3 === 2 ? failedDelivery : settled)(i % 2 ? a : b)));
  return made.map((m) => m.id);
}

test('two instances racing sendDueOnce deliver each (event, url) exactly once when nothing fails', { skip }, async () => {
  const { a, b, close } = await pairOf('once');
  const receivers = await Promise.all([jittery(), jittery(), jittery(), jittery()]);
  try {
    await register(a, ...receivers.map((r) => r.url));
    const ids = await lifecycles(a, b, 9);
    const total = (await webhookMetrics(a.db)).pending;
    assert.ok(total >= 9 * 3 * 4, `${total} deliveries queued`);
    const loop = async (svc: Services) => {
      while ((await pending(svc)) > 0) if ((await sendDueOnce(svc)).claimed === 0) await sleep(1);
    };
    await Promise.all([loop(a.app.svc), loop(b.app.svc), loop(a.app.svc), loop(b.app.svc)]);
    assert.equal(
      receivers.reduce((n, r) => n + r.got.length, 0),
      total,
    );
    await assertExactlyOnce(a, receivers, ids);
    assert.equal((await webhookMetrics(b.db)).delivered, total);
  } finally {
    for (const r of receivers) await r.close();
    await close();
  }
});

test('two running senders share the outbox of events written on both instances: exactly once', { skip }, async () => {
  const { a, b, close } = await pairOf('run');
  const receivers = await Promise.all([jittery(), jittery(), jittery()]);
  const senders = [a, b].map((h) => startWebhookSender(h.app.svc, { log: () => {}, pollMs: 5, concurrency: 2 }));
  try {
    await register(b, ...receivers.map((r) => r.url));
    const ids = await lifecycles(a, b, 8);
    await waitFor(async () => (await pending(a.app.svc)) === 0, 'the outbox to drain', 30_000);
    await assertExactlyOnce(a, receivers, ids);
  } finally {
    await Promise.all(senders.map((s) => s.stop()));
    for (const r of receivers) await r.close();
    await close();
  }
});

test('two running senders keep a URL at WEBHOOK_CONCURRENCY requests in flight in total, not per instance', { skip }, async () => {
  const { a, b, close } = await pairOf('cap', { ...ENV, WEBHOOK_CONCURRENCY: '3' });
  const receivers = await Promise.all(
    [0, 1].map(() =>
      receiver(async () => {
        await sleep(15);
        return 200;
      }),
    ),
  );
  try {
    await register(a, ...receivers.map((r) => r.url));
    const ids = await lifecycles(a, b, 8);
    const senders = [a, b, a, b].map((h) => startWebhookSender(h.app.svc, { log: () => {}, pollMs: 5 }));
    try {
      await waitFor(async () => (await pending(a.app.svc)) === 0, 'the outbox to drain', 30_000);
    } finally {
      await Promise.all(senders.map((s) => s.stop()));
    }
    for (const rx of receivers) assert.ok(rx.maxOpen <= 3, `${rx.url}: ${rx.maxOpen} requests open at once across four senders`);
    await assertExactlyOnce(a, receivers, ids);
  } finally {
    for (const r of receivers) await r.close();
    await close();
  }
});
