// Tenancy in hosted mode (docs/protocol.md §18.3): a minted key sees and acts on its own
// agents and the escrows where it registered a party; everything else is 404; root sees all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { clientKey, PASSING_TERMS } from '../fixtures.ts';
import { HOSTED, mint, ROOT, withKey } from '../admin/helpers.ts';

async function agentOf(h: Harness, label: string) {
  const r = await h.req('POST', '/v1/agents', { label });
  assert.equal(r.status, 201, r.text);
  return r.body as { id: string; publicKey: string };
}

async function escrowOf(h: Harness, payerAgentId: string, payeeAgentId: string) {
  const r = await h.req('POST', '/v1/escrows', { amount: '5', asset: 'USDC', terms: PASSING_TERMS, payerAgentId, payeeAgentId });
  assert.equal(r.status, 201, r.text);
  return r.body.id as string;
}

describeStores(
  'tenancy of minted keys',
  (h) => {
    let a: Harness;
    let b: Harness;
    let root: Harness;
    let mine: string;
    let aAgents: { id: string; publicKey: string }[];

    test('set up: two minted keys, each with its own agents and an escrow', async () => {
      a = withKey(h(), (await mint(h(), { label: 'tenant a' })).secret);
      b = withKey(h(), (await mint(h(), { label: 'tenant b' })).secret);
      root = withKey(h(), ROOT);
      aAgents = [await agentOf(a, 'a payer'), await agentOf(a, 'a payee')];
      mine = await escrowOf(a, aAgents[0].id, aAgents[1].id);
    });

    test("another key's escrow is 404 on every escrow route, exactly as an unknown id", async () => {
      for (const [method, path, body] of [
        ['GET', ''],
        ['POST', '/fund'],
        ['POST', '/refund'],
        ['GET', '/trail'],
        ['GET', '/events'],
        ['GET', '/proof'],
        ['GET', '/custody'],
        ['POST', '/custody/retry'],
        ['GET', '/dispute'],
        ['POST', '/dispute', { agentId: aAgents[0].id }],
        ['POST', '/delivery', { agentId: aAgents[1].id, payload: {} }],
        ['POST', '/dispute/evidence', { agentId: aAgents[0].id, note: 'x' }],
        ['POST', '/dispute/resolve', { outcome: 'refund' }],
      ] as Array<[string, string, unknown?]>) {
        const r = await b.req(method, `/v1/escrows/${mine}${path}`, body);
        assert.equal(expectError(r, 404, 'not_found'), `no escrow ${mine}`, `${method} ${path}`);
      }
      // Nothing happened to it.
      assert.equal((await a.req('GET', `/v1/escrows/${mine}`)).body.state, 'created');
      assert.equal((await a.req('GET', `/v1/escrows/${mine}/trail`)).body.entries.length, 1);
    });

    test("another key's agents are 404 in every field that names one", async () => {
      const bAgent = await agentOf(b, 'b');
      expectError(
        await b.req('POST', '/v1/escrows', {
          amount: '1',
          asset: 'USDC',
          terms: PASSING_TERMS,
          payerAgentId: aAgents[0].id,
          payeeAgentId: bAgent.id,
        }),
        404,
        'not_found',
      );
      const m = expectError(
        await b.req('POST', '/v1/escrows', {
          amount: '1',
          asset: 'USDC',
          terms: PASSING_TERMS,
          payerAgentId: bAgent.id,
          payeeAgentId: aAgents[1].id,
        }),
        404,
        'not_found',
      );
      assert.equal(m, `payeeAgentId: no agent ${aAgents[1].id}`);
      // A key uses a KeyRef for a party it does not hold; that works, and the escrow is its own.
      const own = await b.req('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: bAgent.id,
        payee: { publicKey: aAgents[1].publicKey },
      });
      assert.equal(own.status, 201, own.text);
      // On its own escrow, b cannot act with a's agent either.
      await b.req('POST', `/v1/escrows/${own.body.id}/fund`);
      const d = await b.req('POST', `/v1/escrows/${own.body.id}/delivery`, { agentId: aAgents[1].id, payload: { title: 't' } });
      assert.equal(expectError(d, 404, 'not_found'), `agentId: no agent ${aAgents[1].id}`);
      assert.equal((await b.req('GET', `/v1/escrows/${own.body.id}`)).body.state, 'funded');
    });

    test('lists are filtered: each key lists its own escrows, in creation order, with paging; root lists all', async () => {
      const second = await escrowOf(a, aAgents[0].id, aAgents[1].id);
      const listA = (await a.req('GET', '/v1/escrows')).body.escrows.map((e: any) => e.id);
      assert.deepEqual(listA, [mine, second]);
      const page1 = (await a.req('GET', '/v1/escrows?limit=1')).body;
      assert.deepEqual(
        page1.escrows.map((e: any) => e.id),
        [mine],
      );
      const page2 = (await a.req('GET', `/v1/escrows?limit=1&cursor=${page1.nextCursor}`)).body;
      assert.deepEqual(
        page2.escrows.map((e: any) => e.id),
        [second],
      );
      assert.equal(page2.nextCursor, null);
      assert.deepEqual((await a.req('GET', '/v1/escrows?state=funded')).body.escrows, []);
      const listB = (await b.req('GET', '/v1/escrows')).body.escrows.map((e: any) => e.id);
      assert.ok(!listB.includes(mine) && listB.length === 1, JSON.stringify(listB));
      const all = (await root.req('GET', '/v1/escrows')).body.escrows.map((e: any) => e.id);
      assert.ok(all.includes(mine) && all.includes(second) && all.includes(listB[0]));
    });

    test("root sees and acts on everything; an escrow root makes with a key's agent becomes visible to that key", async () => {
      assert.equal((await root.req('GET', `/v1/escrows/${mine}`)).status, 200);
      const bAgent = await agentOf(b, 'b2');
      const shared = await escrowOf(root, aAgents[0].id, bAgent.id);
      assert.equal((await a.req('GET', `/v1/escrows/${shared}`)).status, 200);
      assert.equal((await b.req('GET', `/v1/escrows/${shared}`)).status, 200);
      // Each acts only with its own agent: b delivers as the payee it registered.
      await root.req('POST', `/v1/escrows/${shared}/fund`);
      const d = await b.req('POST', `/v1/escrows/${shared}/delivery`, { agentId: bAgent.id, payload: { title: 'done' } });
      assert.equal(d.status, 201, d.text);
      const proofId = d.body.proof.id;
      // Proof routes follow the escrow's tenancy.
      for (const p of [`/v1/proofs/${proofId}`, `/v1/proofs/${proofId}/verify`, `/v1/proofs/${proofId}/bundle`]) {
        assert.equal((await a.req('GET', p)).status, 200, p);
      }
      const other = await agentOf(root, 'root-held');
      const rootOnly = await escrowOf(root, other.id, (await agentOf(root, 'root-held-2')).id);
      expectError(await a.req('GET', `/v1/escrows/${rootOnly}`), 404, 'not_found');
      expectError(await a.req('GET', `/v1/proofs/prf_01aaaaaaaaaaaaaaaaaaaaaaaa`), 404, 'not_found');
    });

    test('a key cannot see the proof of an escrow it has no party in', async () => {
      const c = withKey(h(), (await mint(h(), { label: 'tenant c' })).secret);
      const cAgents = [await agentOf(c, 'c1'), await agentOf(c, 'c2')];
      const e = await escrowOf(c, cAgents[0].id, cAgents[1].id);
      await c.req('POST', `/v1/escrows/${e}/fund`);
      const d = await c.req('POST', `/v1/escrows/${e}/delivery`, { agentId: cAgents[1].id, payload: { title: 'done' } });
      const proofId = d.body.proof.id;
      for (const p of [`/v1/proofs/${proofId}`, `/v1/proofs/${proofId}/verify`, `/v1/proofs/${proofId}/bundle`]) {
        assert.equal(expectError(await a.req('GET', p), 404, 'not_found'), `no proof ${proofId}`, p);
        // The same answer as for a proof that does not exist: a foreign id is not an oracle.
        const unknown = p.replace(proofId, 'prf_01aaaaaaaaaaaaaaaaaaaaaaaa');
        assert.equal(expectError(await a.req('GET', unknown), 404, 'not_found'), 'no proof prf_01aaaaaaaaaaaaaaaaaaaaaaaa', unknown);
      }
    });
    test("mandates: a key sees and uses the mandates it registered; another key's is 404 until it registers it too", async () => {
      const principal = clientKey();
      const caps = {
        agent: aAgents[0].publicKey,
        perEscrowMax: '10',
        cumulativeMax: '25',
        allowedAssets: ['USDC'],
        expiresAt: '2099-01-01T00:00:00.000Z',
      };
      const body = {
        principal: principal.publicKey,
        caps,
        signature: { signer: principal.publicKey, signature: principal.sign({ principal: principal.publicKey, caps }) },
      };
      const m = await a.req('POST', '/v1/mandates', body);
      assert.equal(m.status, 201, m.text);
      assert.equal((await a.req('GET', `/v1/mandates/${m.body.id}`)).status, 200);
      assert.equal(expectError(await b.req('GET', `/v1/mandates/${m.body.id}`), 404, 'not_found'), `no mandate ${m.body.id}`);
      const bAgents = [await agentOf(b, 'bm1'), await agentOf(b, 'bm2')];
      const use = {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: bAgents[0].id,
        payeeAgentId: bAgents[1].id,
        mandateId: m.body.id,
      };
      assert.equal(expectError(await b.req('POST', '/v1/escrows', use), 404, 'not_found'), `mandateId: no mandate ${m.body.id}`);
      assert.equal((await root.req('GET', `/v1/mandates/${m.body.id}`)).status, 200);
      // The principal hands the same signed mandate to b: registering it is idempotent and makes it b's too.
      const again = await b.req('POST', '/v1/mandates', body);
      assert.equal(again.status, 200, again.text);
      assert.equal((await b.req('GET', `/v1/mandates/${m.body.id}`)).status, 200);
    });
  },
  HOSTED,
);
