// Endpoints that fail every attempt for WEBHOOK_DISABLE_AFTER_HOURS are disabled (docs/protocol.md §14.5):
// the owner's other endpoints get a webhook.disabled notice, the listing shows it, nothing is sent to
// the endpoint until its owner enables it again, and then what it had pending goes out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { settled } from '../fixtures.ts';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { HOSTED, mint, withKey } from '../admin/helpers.ts';
import { sendDueOnce } from '../../src/jobs/webhooks.ts';
import { receiver, register, sleep, waitFor, type Receiver } from './helpers.ts';

const listed = async (h: Harness) => {
  const r = await h.req('GET', '/v1/webhooks');
  assert.equal(r.status, 200, r.text);
  return r.body as { webhooks: string[]; endpoints: Array<Record<string, unknown> & { url: string }> };
};
const endpoint = async (h: Harness, url: string) => (await listed(h)).endpoints.find((e) => e.url === url);
const attemptsTo = async (h: Harness, url: string) =>
  ((await h.req('GET', '/v1/webhooks/attempts')).body.attempts as Array<{ url: string }>).filter((a) => a.url === url).length;
const notices = (rx: Receiver) => rx.got.map((g) => ({ g, body: JSON.parse(g.body) })).filter((x) => x.body.event === 'webhook.disabled');

/** Sender passes until `cond` holds (retries are due after the suite's short backoff). */
async function passesUntil(h: Harness, cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000) {
  await waitFor(
    async () => {
      await sendDueOnce(h.app.svc);
      return cond();
    },
    what,
    timeoutMs,
  );
}

describeStores(
  'webhook endpoints disabled after failing for WEBHOOK_DISABLE_AFTER_HOURS (sandbox clock)',
  (h) => {
    test('an endpoint failing every attempt for 72 hours is disabled, told to the other endpoints, listed, skipped, and enabled again by its owner', async () => {
      let deadAnswers: number | 'hang' = 500;
      const dead = await receiver(() => deadAnswers);
      const good = await receiver(() => 200);
      try {
        const key = await register(h(), dead.url, good.url);
        await settled(h());
        // Every attempt to the dead URL fails: its failing clock starts, it is not disabled yet.
        await passesUntil(h(), async () => (await endpoint(h(), dead.url))?.failingSince !== undefined && dead.seen >= 3, 'failures');
        const before = await endpoint(h(), dead.url);
        assert.equal(before?.disabled, false);
        assert.equal(typeof before?.failingSince, 'string');
        assert.deepEqual(await endpoint(h(), good.url), { url: good.url, disabled: false });
        assert.equal(notices(good).length, 0);

        // 73 hours later (the sandbox clock, which the database's svc_now() follows), it fails again: disabled.
        assert.equal((await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 73 * 3600 })).status, 200);
        await settled(h());
        await passesUntil(h(), () => notices(good).length > 0, 'the webhook.disabled notice');
        const after = await endpoint(h(), dead.url);
        assert.equal(after?.disabled, true);
        assert.equal(typeof after?.disabledAt, 'string');
        assert.match(
          String(after?.disabledReason),
          /^every attempt failed for 72 hours \(WEBHOOK_DISABLE_AFTER_HOURS\); the last: HTTP 500$/,
        );
        assert.equal(after?.failingSince, before?.failingSince, 'the failures began before the clock moved');

        const [{ g, body }] = notices(good);
        assert.equal(notices(good).length, 1, 'one notice');
        assert.deepEqual(body.data, {
          url: dead.url,
          disabledAt: after?.disabledAt,
          failingSince: after?.failingSince,
          reason: after?.disabledReason,
        });
        assert.equal(body.at, after?.disabledAt);
        assert.match(body.escrowId, /^whn_[0-9a-z]{26}$/, 'the notice id stands where an escrow id does');
        assert.equal(g.headers['webhook-id'], `${body.escrowId}_0`);
        assert.equal(verifyWebhook(g.body, g.headers, key).ok, true, 'the notice is signed like every event');
        assert.equal(dead.got.filter((x) => JSON.parse(x.body).event === 'webhook.disabled').length, 0, 'not sent to the disabled URL');

        // While disabled: nothing is attempted, and new events are not queued for it.
        const tried = await attemptsTo(h(), dead.url);
        const seen = dead.seen;
        const third = await settled(h());
        for (let i = 0; i < 3; i++) {
          await sendDueOnce(h().app.svc);
          await sleep(20);
        }
        assert.equal(await attemptsTo(h(), dead.url), tried, 'no attempt while disabled');
        assert.equal(dead.seen, seen);
        const queued = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE url = $1 AND escrow_id = $2', [
          dead.url,
          third.id,
        ]);
        assert.equal(Number(queued[0].n), 0, 'events made while it is disabled are not queued for it');
        const paused = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE url = $1', [dead.url]);
        assert.ok(Number(paused[0].n) > 0, 'what it had pending when it was disabled waits');

        // Its owner enables it: the rows it had pending go out, and its failing clock is gone.
        deadAnswers = 200;
        const en = await h().req('POST', '/v1/webhooks/enable', { url: dead.url });
        assert.deepEqual([en.status, en.body], [200, { ok: true, url: dead.url, disabled: false, wasDisabled: true }]);
        assert.deepEqual(await endpoint(h(), dead.url), { url: dead.url, disabled: false });
        await passesUntil(
          h(),
          async () => {
            const left = await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE url = $1', [dead.url]);
            return Number(left[0].n) === 0;
          },
          'the paused rows delivered',
        );
        assert.ok(dead.got.length >= Number(paused[0].n));
        const again = await h().req('POST', '/v1/webhooks/enable', { url: dead.url });
        assert.deepEqual([again.status, again.body.wasDisabled], [200, false], 'enabling an enabled URL changes nothing');
      } finally {
        await dead.close();
        await good.close();
        await h().req('DELETE', '/v1/webhooks', { url: dead.url });
        await h().req('DELETE', '/v1/webhooks', { url: good.url });
      }
    });

    test('enable refuses what it cannot act on: an unregistered URL 404, a body without url 400 naming it', async () => {
      expectError(await h().req('POST', '/v1/webhooks/enable', { url: 'http://127.0.0.1:9/never' }), 404, 'not_found');
      assert.match(expectError(await h().req('POST', '/v1/webhooks/enable', {}), 400, 'bad_request'), /url/);
      assert.match(expectError(await h().req('POST', '/v1/webhooks/enable', { url: 'x', extra: 1 }), 400, 'bad_request'), /extra/);
    });
  },
  { WEBHOOK_BACKOFF_MS: '1,1', WEBHOOK_TIMEOUT_MS: '5000' },
);

// A fraction of an hour (1.8 s) on the database's own clock, in hosted mode with two tenants.
describeStores(
  'webhook endpoints disabled after WEBHOOK_DISABLE_AFTER_HOURS=0.0005, per owner',
  (h) => {
    test("the notice goes to the owner's other endpoints only; another key neither gets it nor may enable the URL", async () => {
      const a = withKey(h(), (await mint(h(), { label: 'a' })).secret);
      const b = withKey(h(), (await mint(h(), { label: 'b' })).secret);
      const dead = await receiver(() => 503);
      const goodA = await receiver(() => 200);
      const goodB = await receiver(() => 200);
      try {
        await register(a, dead.url, goodA.url);
        await register(b, goodB.url);
        await settled(a);
        await passesUntil(h(), async () => (await endpoint(a, dead.url))?.failingSince !== undefined, 'the first failure');
        assert.equal((await endpoint(a, dead.url))?.disabled, false);
        await sleep(2_000);
        await settled(a);
        await settled(b);
        await passesUntil(h(), () => notices(goodA).length > 0, 'the notice to the owner');
        const off = await endpoint(a, dead.url);
        assert.equal(off?.disabled, true);
        assert.match(String(off?.disabledReason), /^every attempt failed for 0\.0005 hours .*HTTP 503$/);
        assert.equal(notices(goodA)[0].body.data.url, dead.url);
        // Give the sender the chance to send it elsewhere, then check it did not.
        for (let i = 0; i < 3; i++) await sendDueOnce(h().app.svc);
        assert.equal(notices(goodB).length, 0, "another key's endpoint is not told");
        assert.ok(goodB.got.length > 0, "the other key's own events were delivered");
        assert.equal((await listed(b)).endpoints.length, 1, 'b lists only its own URL');
        expectError(await b.req('POST', '/v1/webhooks/enable', { url: dead.url }), 404, 'not_found');
        assert.equal((await endpoint(a, dead.url))?.disabled, true);
        // Root may enable any URL.
        const en = await h().req('POST', '/v1/webhooks/enable', { url: dead.url }, { authorization: `Bearer ${HOSTED.API_KEY}` });
        assert.deepEqual([en.status, en.body.wasDisabled], [200, true]);
        assert.equal((await endpoint(a, dead.url))?.disabled, false);
      } finally {
        await dead.close();
        await goodA.close();
        await goodB.close();
      }
    });
  },
  { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_BACKOFF_MS: '1,1', WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_DISABLE_AFTER_HOURS: '0.0005' },
);
