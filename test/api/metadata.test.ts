// Escrow metadata (docs/protocol.md §3.5): Stripe's limits, set at creation, echoed on every escrow and every
// webhook event, and never part of a proof, the trail or a bundle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { agent, PASSING_TERMS } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { createClient, type Terms } from '@escrow-settlement/client';
import { drain, receiver, register, unregister } from '../webhooks/helpers.ts';

const META = { orderId: 'ord_1234', customer: 'Zoë · 🧾', note: '' };

async function create(h: Harness, extra: Record<string, unknown>, headers: Record<string, string> = {}) {
  const payer = await agent(h, 'payer');
  const payee = await agent(h, 'payee');
  return h.req(
    'POST',
    '/v1/escrows',
    { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id, ...extra },
    headers,
  );
}

const count = async (h: Harness) => (await h.db.query('SELECT count(*)::int AS n FROM escrows'))[0].n as number;

describeStores(
  'escrow metadata',
  (h) => {
    test('metadata set at creation is echoed on create, read, list, fund, events and every webhook delivery', async () => {
      const rx = await receiver();
      try {
        const key = await register(h(), rx.url);
        const body = {
          amount: '3',
          asset: 'USDC',
          terms: PASSING_TERMS,
          payerAgentId: (await agent(h())).id,
          payeeAgentId: (await agent(h())).id,
          metadata: META,
        };
        const c = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'meta-1' });
        assert.equal(c.status, 201, c.text);
        assert.deepEqual(c.body.metadata, META);
        const replay = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'meta-1' });
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(replay.body, c.body);
        const id = c.body.id;
        assert.deepEqual((await h().req('GET', `/v1/escrows/${id}`)).body.metadata, META);
        const listed = (await h().req('GET', '/v1/escrows')).body.escrows.find((e: any) => e.id === id);
        assert.deepEqual(listed.metadata, META);
        const paged = (await h().req('GET', `/v1/escrows?limit=1000`)).body.escrows.find((e: any) => e.id === id);
        assert.deepEqual(paged.metadata, META);
        const funded = await h().req('POST', `/v1/escrows/${id}/fund`);
        assert.deepEqual(funded.body.metadata, META);
        const payee = (await h().db.query('SELECT id FROM agents WHERE public_key = $1', [c.body.payee.publicKey]))[0].id;
        const d = await h().req('POST', `/v1/escrows/${id}/delivery`, { agentId: payee, payload: { title: 't' } });
        assert.equal(d.status, 201, d.text);
        await drain(h().app.svc);
        const events = (await h().req('GET', `/v1/escrows/${id}/events`)).body.events;
        assert.ok(events.length >= 5);
        for (const e of events) assert.deepEqual(e.metadata, META, `${e.event} carries the metadata`);
        const pagedEvents = (await h().req('GET', `/v1/escrows/${id}/events?limit=2`)).body.events;
        assert.deepEqual(pagedEvents, events.slice(0, 2));
        const got = rx.got.filter((g) => JSON.parse(g.body).escrowId === id);
        assert.equal(got.length, events.length);
        for (const [i, g] of got.entries()) {
          assert.equal(g.body, canonicalize(events[i]), 'the webhook body is the replayed event, metadata included');
          const v = verifyWebhook(g.body, g.headers, key);
          assert.equal(v.ok, true);
          assert.deepEqual(v.event, events[i], 'the client library hands the receiver the metadata too');
        }
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });

    test('metadata is not part of the proof, the trail or the bundle', async () => {
      const marker = 'only-in-metadata-7f3a';
      const c = await create(h(), { metadata: { ref: marker } });
      const id = c.body.id;
      await h().req('POST', `/v1/escrows/${id}/fund`);
      const payee = (await h().db.query('SELECT id FROM agents WHERE public_key = $1', [c.body.payee.publicKey]))[0].id;
      const d = await h().req('POST', `/v1/escrows/${id}/delivery`, { agentId: payee, payload: { title: 't' } });
      const proof = d.body.proof;
      assert.ok(proof);
      assert.equal('metadata' in proof, false);
      const trail = (await h().req('GET', `/v1/escrows/${id}/trail`)).body;
      assert.equal(trail.intactUpTo, null);
      assert.equal(JSON.stringify(trail).includes(marker), false, 'the trail holds no metadata');
      assert.equal(trail.entries[0].body.escrow.id, id, 'escrow.created still carries the escrow');
      const bundle = await h().req('GET', `/v1/proofs/${proof.id}/bundle`);
      assert.equal(bundle.status, 200);
      assert.equal(bundle.text.includes(marker), false, 'the bundle holds no metadata');
      assert.equal((await h().req('GET', `/v1/proofs/${proof.id}/verify`)).body.signatureValid, true);
    });

    test('an escrow without metadata (or with {}) shows none, and its events are unchanged', async () => {
      for (const extra of [{}, { metadata: {} }]) {
        const c = await create(h(), extra);
        assert.equal(c.status, 201, c.text);
        assert.equal('metadata' in c.body, false);
        const events = (await h().req('GET', `/v1/escrows/${c.body.id}/events`)).body.events;
        assert.deepEqual(Object.keys(events[0]).sort(), ['at', 'data', 'escrowId', 'event']);
      }
    });

    test("Stripe's limits: 50 keys, key 40 characters, value 500 characters; a violation is a 400 naming metadata.<key> and writes nothing", async () => {
      const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
      const edge = { ['k'.repeat(40)]: 'v'.repeat(500) };
      assert.equal((await create(h(), { metadata: fifty })).status, 201);
      assert.deepEqual((await create(h(), { metadata: edge })).body.metadata, edge);
      const before = await count(h());
      const cases: Array<[unknown, RegExp]> = [
        [{ ...fifty, k50: 'v' }, /^metadata has 51 keys/],
        [{ ['k'.repeat(41)]: 'v' }, new RegExp(`^metadata\\.${'k'.repeat(41)} key is 41 characters`)],
        [{ orderId: 'v'.repeat(501) }, /^metadata\.orderId is 501 characters/],
        [{ orderId: 5 }, /^metadata\.orderId must be a string/],
        [{ orderId: null }, /^metadata\.orderId must be a string/],
        [{ orderId: { nested: 'x' } }, /^metadata\.orderId must be a string/],
        [{ '': 'v' }, /^metadata keys must not be empty/],
        [{ bad: 'a\u0000b' }, /^metadata\.bad/],
        [['a'], /^metadata/],
        ['text', /^metadata/],
        [null, /^metadata/],
      ];
      for (const [metadata, message] of cases) {
        const r = await create(h(), { metadata });
        assert.match(expectError(r, 400, 'bad_request'), message, JSON.stringify(metadata).slice(0, 80));
      }
      assert.equal(await count(h()), before, 'no refused request left an escrow behind');
    });

    test("a dead letter's event carries the metadata exactly as it was sent", async () => {
      const rx = await receiver(() => 500);
      try {
        await register(h(), rx.url);
        const c = await create(h(), { metadata: { orderId: 'dl-1' } });
        await drain(h().app.svc, 30_000);
        const letters = (await h().req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.filter(
          (d: any) => d.event.escrowId === c.body.id,
        );
        assert.equal(letters.length, 1);
        assert.deepEqual(letters[0].event.metadata, { orderId: 'dl-1' });
        assert.equal(canonicalize(letters[0].event), rx.got[rx.got.length - 1].body);
      } finally {
        await unregister(h(), rx.url);
        await rx.close();
      }
    });
  },
  { WEBHOOK_BACKOFF_MS: '5,5,5,5', WEBHOOK_TIMEOUT_MS: '2000' },
);

describeStores('metadata, filters and pages through the client library', (h) => {
  test('the typed client creates with metadata, filters by agent and follows nextCursor on every list', async () => {
    const api = createClient({ baseUrl: 'http://sandbox.local', fetch: (req: Request) => h().app.fetch(req) });
    const payer = await api.agents.create({ label: 'payer' });
    const payee = await api.agents.create({ label: 'payee' });
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push(
        await api.escrows.create({
          amount: '1',
          asset: 'USDC',
          terms: PASSING_TERMS as Terms,
          payerAgentId: payer.id,
          payeeAgentId: payee.id,
          metadata: { n: String(i) },
        }),
      );
    }
    const seen = [];
    let cursor: string | undefined;
    do {
      const page = await api.escrows.list({ agentId: payer.id, limit: 2, cursor });
      seen.push(...page.escrows);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.deepEqual(
      seen.map((e) => e.metadata),
      [{ n: '0' }, { n: '1' }, { n: '2' }],
    );
    assert.deepEqual(
      seen.map((e) => e.id),
      made.map((e) => e.id),
    );
    const first = await api.escrows.events(made[0].id, { limit: 1 });
    assert.equal(first.events.length, 1);
    assert.deepEqual(first.events[0].metadata, { n: '0' });
    assert.equal(typeof first.nextCursor, 'object', 'one event: no next page');
    assert.equal((await api.escrows.trail(made[0].id, { limit: 1 })).nextCursor, null);
  });
});
