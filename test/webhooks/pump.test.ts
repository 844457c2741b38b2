// How the sender starts what it has claimed (docs/security.md "Webhook fairness"): fast lanes before
// slow ones, never more than a batch in one turn of the event loop, slow lanes never asking for a
// claim of their own, and the running sender leaving the event loop (and PGlite's one connection)
// room between ticks however long a tick takes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStores, makeHarness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { HOSTED, mint, withKey } from '../admin/helpers.ts';
import { SenderEngine } from '../../src/webhooks/sender.ts';
import { startWebhookSender } from '../../src/jobs/webhooks.ts';
import type { WebhookRequest, WebhookResult } from '../../src/webhooks/transport.ts';
import type { Db } from '../../src/db/types.ts';

const DEAD = 24;

/** A transport that records each request's URL and answers 500 at once, or holds it until released. */
function recorder() {
  const calls: string[] = [];
  const held: Array<() => void> = [];
  let hold = false;
  const transport = (req: WebhookRequest): Promise<WebhookResult> => {
    calls.push(req.url);
    if (!hold) return Promise.resolve({ status: 500 });
    return new Promise((resolve) => held.push(() => resolve({ status: 500 })));
  };
  return {
    calls,
    transport,
    holdFromNowOn: () => {
      hold = true;
    },
    releaseAll: () => {
      for (const r of held.splice(0)) r();
    },
  };
}

describeStores(
  'the webhook pump',
  (h) => {
    test('after a burst of failures, a healthy URL starts before the failing ones, and a burst starts in batches', async () => {
      const a = withKey(h(), (await mint(h(), { label: 'failing' })).secret);
      const b = withKey(h(), (await mint(h(), { label: 'healthy' })).secret);
      for (let i = 0; i < DEAD; i++)
        assert.equal((await a.req('POST', '/v1/webhooks', { url: `http://127.0.0.1:9/dead/${i}` })).status, 201);
      const good = 'http://127.0.0.1:9/good';
      assert.equal((await b.req('POST', '/v1/webhooks', { url: good })).status, 201);
      await settled(a);
      const rec = recorder();
      const engine = new SenderEngine({ ...h().app.svc, webhookTransport: rec.transport }, { perUrl: 1, prefetch: false });
      // First round: every dead URL's first event fails at once, so each of their lanes is slow.
      assert.equal(await engine.tick(true), DEAD);
      engine.pump();
      await engine.settle();
      assert.equal(rec.calls.length, DEAD);
      // The healthy key's events land now, after the dead ones' retries are due (backoff of 1 ms).
      await settled(b);
      await new Promise((r) => setTimeout(r, 20));
      rec.calls.length = 0;
      rec.holdFromNowOn();
      assert.equal(await engine.tick(true), DEAD + 1);
      engine.pump();
      // One batch in this turn of the event loop, the healthy URL first although its lane came last.
      assert.equal(rec.calls.length, 16, 'one batch starts synchronously');
      assert.equal(rec.calls[0], good);
      assert.equal(engine.wantsTick(), true, 'the healthy lane has nothing queued behind its request');
      await new Promise((r) => setImmediate(r));
      assert.equal(rec.calls.length, DEAD + 1, 'the rest of the burst starts on the next turn');
      rec.releaseAll();
      await engine.settle();
      await engine.tick(false);
    });

    test('lanes that only retry a failing URL do not ask for a claim of their own', async () => {
      const a = withKey(h(), (await mint(h(), { label: 'failing-only' })).secret);
      for (let i = 0; i < 3; i++) assert.equal((await a.req('POST', '/v1/webhooks', { url: `http://127.0.0.1:9/only/${i}` })).status, 201);
      await settled(a);
      const rec = recorder();
      const engine = new SenderEngine({ ...h().app.svc, webhookTransport: rec.transport }, { perUrl: 1, prefetch: false });
      assert.ok((await engine.tick(true)) >= 3);
      engine.pump();
      await engine.settle();
      await new Promise((r) => setTimeout(r, 20));
      rec.holdFromNowOn();
      assert.ok((await engine.tick(true)) >= 3);
      engine.pump();
      // Every lane is slow and busy: a finished request here would not wake a claim.
      assert.equal(engine.wantsTick(), false);
      rec.releaseAll();
      await engine.settle();
      await engine.tick(false);
    });
  },
  { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_MAX_URLS_PER_KEY: '30', WEBHOOK_BACKOFF_MS: '1,1,1,1' },
);

test('a running sender whose ticks outlast its poll still lets the event loop turn (PGlite answers without one)', {
  timeout: 30_000,
}, async () => {
  const h = await makeHarness('pglite', { ...HOSTED, WEBHOOK_BACKOFF_MS: '1,1,1,1' });
  try {
    // Every tick's transaction holds the thread for 60 ms, as a slow PGlite claim does: three poll
    // periods. Without a turn of the event loop between ticks, no timer would fire until stop.
    // For the first 800 ms only, so a sender that starves the loop gives it back and this fails
    // instead of hanging.
    const slowUntil = Date.now() + 800;
    const db: Db = Object.create(h.db);
    db.tx = (fn) => {
      const until = Date.now() + 60;
      while (Date.now() < until && Date.now() < slowUntil);
      return h.db.tx(fn);
    };
    let last = Date.now();
    let worst = 0;
    const timer = setInterval(() => {
      worst = Math.max(worst, Date.now() - last);
      last = Date.now();
    }, 5);
    const sender = startWebhookSender({ ...h.app.svc, db }, { log: () => {}, pollMs: 20 });
    await new Promise((r) => setTimeout(r, 1_000));
    await sender.stop();
    clearInterval(timer);
    // One tick (60 ms), its idle gap and a timer's own lateness; starved, this would be about 800 ms.
    assert.ok(worst < 400, `the event loop was held for ${worst} ms`);
  } finally {
    await h.close();
  }
});
