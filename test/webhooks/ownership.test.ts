// What a key owns among webhooks: at most WEBHOOK_MAX_URLS_PER_KEY URLs (409 beyond, counted under a
// lock), and its dead letters, which stay listed after it unregisters the URL and are redelivered
// only once the URL is registered again (docs/security.md).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { HOSTED, mint, ROOT, withKey } from '../admin/helpers.ts';
import { drain, receiver, type Receiver } from './helpers.ts';

const CAP = 3;

async function escrowOf(k: Harness): Promise<string> {
  const agents: string[] = [];
  for (const label of ['p', 'q']) agents.push((await k.req('POST', '/v1/agents', { label })).body.id);
  const r = await k.req('POST', '/v1/escrows', {
    amount: '5',
    asset: 'USDC',
    terms: PASSING_TERMS,
    payerAgentId: agents[0],
    payeeAgentId: agents[1],
  });
  assert.equal(r.status, 201, r.text);
  assert.equal((await k.req('POST', `/v1/escrows/${r.body.id}/fund`)).status, 200);
  return r.body.id;
}

describeStores(
  'webhook URLs per key',
  (h) => {
    test('a key registers up to the cap; the next URL is 409 naming the cap; its own again, other keys and root are not counted', async () => {
      const a = withKey(h(), (await mint(h(), { label: 'a' })).secret);
      const b = withKey(h(), (await mint(h(), { label: 'b' })).secret);
      const root = withKey(h(), ROOT);
      const url = (k: string, i: number) => `https://hooks.example/${k}/${i}`;
      for (let i = 0; i < CAP; i++) assert.equal((await a.req('POST', '/v1/webhooks', { url: url('a', i) })).status, 201);
      const m = expectError(await a.req('POST', '/v1/webhooks', { url: url('a', CAP) }), 409, 'invalid_state');
      assert.match(m, new RegExp(`already has ${CAP} webhook URLs registered.*WEBHOOK_MAX_URLS_PER_KEY=${CAP}`));
      // The same URL again, in another spelling too, is not a new URL.
      assert.equal((await a.req('POST', '/v1/webhooks', { url: url('a', 0) })).status, 201);
      assert.equal((await a.req('POST', '/v1/webhooks', { url: 'HTTPS://hooks.example:443/%61/0?' })).status, 201);
      for (let i = 0; i < CAP; i++) assert.equal((await b.req('POST', '/v1/webhooks', { url: url('b', i) })).status, 201);
      for (let i = 0; i < CAP; i++) assert.equal((await root.req('POST', '/v1/webhooks', { url: url('root', i) })).status, 201);
      expectError(await root.req('POST', '/v1/webhooks', { url: url('root', CAP) }), 409, 'invalid_state');
      // Unregistering frees a place.
      assert.equal((await a.req('DELETE', '/v1/webhooks', { url: url('a', 1) })).status, 200);
      assert.equal((await a.req('POST', '/v1/webhooks', { url: url('a', CAP) })).status, 201);
      assert.equal((await a.req('GET', '/v1/webhooks')).body.webhooks.length, CAP);
    });

    test('concurrent registrations of one key cannot pass the cap together', async () => {
      const c = withKey(h(), (await mint(h(), { label: 'c' })).secret);
      const tries = await Promise.all(
        Array.from({ length: 8 }, (_, i) => c.req('POST', '/v1/webhooks', { url: `https://hooks.example/c/${i}` })),
      );
      assert.equal(tries.filter((r) => r.status === 201).length, CAP, tries.map((r) => r.status).join(','));
      assert.ok(tries.every((r) => r.status === 201 || r.body?.error?.code === 'invalid_state'));
      assert.equal((await c.req('GET', '/v1/webhooks')).body.webhooks.length, CAP);
    });
  },
  { ...HOSTED, WEBHOOK_MAX_URLS_PER_KEY: String(CAP) },
);

describeStores(
  'dead letters after the URL is removed',
  (h) => {
    let a: Harness;
    let b: Harness;
    let root: Harness;
    let rx: Receiver;
    after(async () => rx?.close());

    test('they stay listed for the key that owned the URL, and only for it', async () => {
      a = withKey(h(), (await mint(h(), { label: 'a' })).secret);
      b = withKey(h(), (await mint(h(), { label: 'b' })).secret);
      root = withKey(h(), ROOT);
      rx = await receiver(() => 500);
      assert.equal((await a.req('POST', '/v1/webhooks', { url: rx.url })).status, 201);
      await escrowOf(a);
      await drain(h().app.svc);
      const before = (await a.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.ok(before.length > 0);
      assert.equal((await a.req('DELETE', '/v1/webhooks', { url: rx.url })).status, 200);
      const afterRemoval = (await a.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.deepEqual(
        afterRemoval.map((d: any) => d.id),
        before.map((d: any) => d.id),
      );
      assert.deepEqual((await b.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters, []);
      const all = (await root.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.map((d: any) => d.id);
      assert.ok(before.every((d: any) => all.includes(d.id)));
    });

    test('redelivery waits for the URL to be registered again, by its key; then it is sent', async () => {
      const [dl] = (await a.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.match(
        expectError(await a.req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`), 409, 'invalid_state'),
        /is not registered now; register it again/,
      );
      assert.match(
        expectError(await root.req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`), 409, 'invalid_state'),
        /is not registered now/,
      );
      // Another key taking the URL does not let the old owner's event go there.
      assert.equal((await b.req('POST', '/v1/webhooks', { url: rx.url })).status, 201);
      assert.match(
        expectError(await a.req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`), 409, 'invalid_state'),
        /registered by another key/,
      );
      expectError(await b.req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`), 404, 'not_found');
      assert.equal((await b.req('DELETE', '/v1/webhooks', { url: rx.url })).status, 200);
      // Registered again by its key: the redelivery is accepted and delivered; the dead letter leaves.
      assert.equal((await a.req('POST', '/v1/webhooks', { url: rx.url })).status, 201);
      rx.behaviour = () => 200;
      const seen = rx.got.length;
      assert.equal((await a.req('POST', `/v1/webhooks/dead-letters/${dl.id}/redeliver`)).status, 202);
      await drain(h().app.svc);
      assert.equal(rx.got.length, seen + 1);
      assert.equal(JSON.parse(rx.got[seen].body).escrowId, dl.event.escrowId);
      assert.ok(!(await a.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.some((d: any) => d.id === dl.id));
    });
  },
  { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_BACKOFF_MS: '1' },
);
