// Webhook tenancy (docs/protocol.md §14.4): a URL registered by a minted key receives only the events of
// escrows that key sees; its registrations, dead letters and attempts are its own (another key's are
// 404 or absent); the root key's registrations receive everything and root sees every row.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { HOSTED, mint, ROOT, withKey } from '../admin/helpers.ts';
import { drain, position, receiver, type Receiver } from './helpers.ts';

async function agentOf(h: Harness, label: string): Promise<string> {
  const r = await h.req('POST', '/v1/agents', { label });
  assert.equal(r.status, 201, r.text);
  return r.body.id;
}

async function escrowOf(h: Harness, parties: Record<string, unknown>): Promise<string> {
  const r = await h.req('POST', '/v1/escrows', { amount: '5', asset: 'USDC', terms: PASSING_TERMS, ...parties });
  assert.equal(r.status, 201, r.text);
  assert.equal((await h.req('POST', `/v1/escrows/${r.body.id}/fund`)).status, 200);
  return r.body.id;
}

const escrowsOf = (rx: Receiver) => new Set(rx.got.map((g) => position(g).escrowId));
const sorted = (xs: Iterable<string>) => [...xs].sort();

/** Every page of a list, following nextCursor with ?limit=1. */
async function allPages(h: Harness, path: string, field: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null | undefined;
  do {
    const r = await h.req('GET', `${path}?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body[field].length <= 1);
    out.push(...r.body[field]);
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}

describeStores(
  'webhook tenancy',
  (h) => {
    let a: Harness;
    let b: Harness;
    let root: Harness;
    let ra: Receiver;
    let rb: Receiver;
    let rr: Receiver;
    let ea: string;
    let eb: string;
    let eRootForA: string;
    let eRoot: string;
    const rxs: Receiver[] = [];
    after(async () => {
      for (const r of rxs) await r.close();
    });

    test('set up: two minted keys and root, each with a receiver; escrows of each', async () => {
      a = withKey(h(), (await mint(h(), { label: 'tenant a' })).secret);
      b = withKey(h(), (await mint(h(), { label: 'tenant b' })).secret);
      root = withKey(h(), ROOT);
      // Every receiver fails, so each event is tried twice (WEBHOOK_BACKOFF_MS=1) and dead-lettered.
      [ra, rb, rr] = [await receiver(() => 500), await receiver(() => 500), await receiver(() => 500)];
      rxs.push(ra, rb, rr);
      for (const [k, rx] of [
        [a, ra],
        [b, rb],
        [root, rr],
      ] as const) {
        const r = await k.req('POST', '/v1/webhooks', { url: rx.url });
        assert.equal(r.status, 201, r.text);
        assert.match(r.body.standardWebhooks.secret, /^whsec_/);
      }
      ea = await escrowOf(a, { payerAgentId: await agentOf(a, 'a1'), payeeAgentId: await agentOf(a, 'a2') });
      const bAgents = [await agentOf(b, 'b1'), await agentOf(b, 'b2')];
      eb = await escrowOf(b, { payerAgentId: bAgents[0], payeeAgentId: bAgents[1] });
      // Root creates one with a's agent (so a sees it) and one with bare keys (no minted key sees it).
      eRootForA = await escrowOf(root, { payerAgentId: await agentOf(a, 'a3'), payee: { publicKey: 'c'.repeat(64) } });
      eRoot = await escrowOf(root, { payer: { publicKey: 'd'.repeat(64) }, payee: { publicKey: 'e'.repeat(64) } });
      await drain(h().app.svc);
    });

    test("each key's receiver gets only its own escrows' events; root's gets every escrow's", () => {
      assert.deepEqual(sorted(escrowsOf(ra)), sorted([ea, eRootForA]));
      assert.deepEqual(sorted(escrowsOf(rb)), [eb]);
      assert.deepEqual(sorted(escrowsOf(rr)), sorted([ea, eb, eRootForA, eRoot]));
      // Same events, same number of tries: the scoping drops URLs, not events.
      assert.equal(ra.got.filter((g) => position(g).escrowId === ea).length, rr.got.filter((g) => position(g).escrowId === ea).length);
    });

    test("GET /v1/webhooks lists a key's own URLs (paged too); root lists all", async () => {
      assert.deepEqual((await a.req('GET', '/v1/webhooks')).body.webhooks, [ra.url]);
      assert.deepEqual((await b.req('GET', '/v1/webhooks')).body.webhooks, [rb.url]);
      assert.deepEqual(await allPages(b, '/v1/webhooks', 'webhooks'), [rb.url]);
      assert.deepEqual(await allPages(root, '/v1/webhooks', 'webhooks'), [ra.url, rb.url, rr.url]);
    });

    test("dead letters and attempts: a key sees its URLs' rows on its escrows only; root sees all", async () => {
      const dlA = (await a.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.ok(dlA.length > 0);
      assert.ok(
        dlA.every((d: any) => d.url === ra.url && [ea, eRootForA].includes(d.event.escrowId)),
        JSON.stringify(dlA),
      );
      assert.deepEqual(
        (await allPages(a, '/v1/webhooks/dead-letters', 'deadLetters')).map((d) => d.id),
        dlA.map((d: any) => d.id),
      );
      const dlB = (await b.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.ok(dlB.length > 0 && dlB.every((d: any) => d.url === rb.url && d.event.escrowId === eb));
      const dlRoot = (await root.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.equal(dlRoot.length, dlA.length + dlB.length + rr.got.length / 2);

      const atA = (await a.req('GET', '/v1/webhooks/attempts')).body.attempts;
      assert.equal(atA.length, ra.got.length);
      assert.ok(atA.every((x: any) => x.url === ra.url));
      assert.deepEqual((await a.req('GET', `/v1/webhooks/attempts?escrowId=${eb}`)).body.attempts, []);
      const p1 = await b.req('GET', '/v1/webhooks/attempts?limit=1');
      const p2 = await b.req('GET', `/v1/webhooks/attempts?limit=100&cursor=${p1.body.nextCursor}`);
      assert.equal(p1.body.attempts.length + p2.body.attempts.length, rb.got.length);
      assert.ok([...p1.body.attempts, ...p2.body.attempts].every((x: any) => x.url === rb.url && x.escrowId === eb));
      const atRoot = (await root.req('GET', `/v1/webhooks/attempts?escrowId=${eb}`)).body.attempts;
      assert.deepEqual(sorted(new Set(atRoot.map((x: any) => x.url))), sorted([rb.url, rr.url]));
    });

    test("redeliver and delete of another key's item are 404 as if it did not exist; its own work", async () => {
      const dlB = (await b.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.equal(
        expectError(await a.req('POST', `/v1/webhooks/dead-letters/${dlB[0].id}/redeliver`), 404, 'not_found'),
        `no dead letter ${dlB[0].id}`,
      );
      assert.equal(
        expectError(await a.req('DELETE', '/v1/webhooks', { url: rb.url }), 404, 'not_found'),
        `no webhook registered for ${rb.url}`,
      );
      assert.deepEqual(
        (await b.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.map((d: any) => d.id),
        dlB.map((d: any) => d.id),
      );
      assert.deepEqual((await b.req('GET', '/v1/webhooks')).body.webhooks, [rb.url]);

      rb.behaviour = () => 200;
      const seen = rb.got.length;
      const r = await b.req('POST', `/v1/webhooks/dead-letters/${dlB[0].id}/redeliver`);
      assert.equal(r.status, 202, r.text);
      await drain(h().app.svc);
      assert.equal(rb.got.length, seen + 1);
      const redelivered = rb.got[seen];
      assert.equal(redelivered.headers['webhook-id'].startsWith(eb), true);
      assert.equal(
        redelivered.body,
        rb.got.find((g) => g.headers['webhook-id'] === redelivered.headers['webhook-id'])!.body,
        'the same bytes as first sent',
      );
    });

    test('a URL has one owner: another key (or root) registering it is 409; the owner re-registers idempotently', async () => {
      assert.match(
        expectError(await b.req('POST', '/v1/webhooks', { url: ra.url }), 409, 'invalid_state'),
        /^url: .* is registered by another key/,
      );
      expectError(await root.req('POST', '/v1/webhooks', { url: ra.url }), 409, 'invalid_state');
      expectError(await a.req('POST', '/v1/webhooks', { url: rr.url }), 409, 'invalid_state');
      const again = await a.req('POST', '/v1/webhooks', { url: ra.url });
      assert.equal(again.status, 201, again.text);
      assert.equal(again.body.standardWebhooks.secret, undefined);
      assert.deepEqual((await a.req('GET', '/v1/webhooks')).body.webhooks, [ra.url]);
    });

    test("a URL that changes hands shows and sends the new owner nothing of the old owner's escrows", async () => {
      const old = (await a.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.equal((await a.req('DELETE', '/v1/webhooks', { url: ra.url })).status, 200);
      assert.equal((await b.req('POST', '/v1/webhooks', { url: ra.url })).status, 201);
      assert.deepEqual((await b.req('GET', '/v1/webhooks')).body.webhooks.sort(), sorted([ra.url, rb.url]));
      const dlB = (await b.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters;
      assert.ok(
        dlB.every((d: any) => d.event.escrowId === eb),
        JSON.stringify(dlB),
      );
      assert.ok((await b.req('GET', '/v1/webhooks/attempts')).body.attempts.every((x: any) => x.escrowId === eb));
      expectError(await b.req('POST', `/v1/webhooks/dead-letters/${old[0].id}/redeliver`), 404, 'not_found');
      // Even root cannot send a's escrow's event to the URL b now holds.
      const m = expectError(await root.req('POST', `/v1/webhooks/dead-letters/${old[0].id}/redeliver`), 409, 'invalid_state');
      assert.match(m, /registered by a key that does not see its escrow/);
      assert.ok((await root.req('GET', '/v1/webhooks/dead-letters')).body.deadLetters.some((d: any) => d.id === old[0].id));
      // New events of a's escrows no longer reach the URL; b's do.
      ra.got.length = 0;
      ra.behaviour = () => 200;
      assert.equal((await a.req('POST', `/v1/escrows/${ea}/refund`)).status, 200);
      assert.equal((await b.req('POST', `/v1/escrows/${eb}/refund`)).status, 200);
      await drain(h().app.svc);
      assert.deepEqual(sorted(escrowsOf(ra)), [eb]);
    });
  },
  { ...HOSTED, WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_BACKOFF_MS: '1' },
);
