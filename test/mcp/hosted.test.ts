// POST /mcp on a hosted deployment: the same bearer keys, tenancy and rate limits as the REST API,
// for the MCP request and for every tool call in it (docs/mcp.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeys } from '@escrow-settlement/client';
import { describeStores } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { bearer, HOSTED, mint, ROOT } from '../admin/helpers.ts';
import { BASE, connectHttp, fails, ok } from './helpers.ts';

const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2025-06-18' };

describeStores(
  'MCP on a hosted deployment',
  (h) => {
    const escrowArgs = () => ({
      amount: '2',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payer: { publicKey: generateKeys().publicKey },
      payee: { publicKey: generateKeys().publicKey },
    });

    test('without a key, or with an unknown or revoked one, POST /mcp is 401 and no tool runs', async () => {
      const bare = await h().app.fetch(new Request(`${BASE}/mcp`, { method: 'POST', headers: HEADERS, body: LIST }));
      assert.equal(bare.status, 401);
      assert.equal((await bare.json()).error.code, 'unauthorized');
      assert.match(bare.headers.get('www-authenticate')!, /^Bearer/);
      const wrong = await h().app.fetch(
        new Request(`${BASE}/mcp`, { method: 'POST', headers: { ...HEADERS, ...bearer('esk_not-a-key') }, body: LIST }),
      );
      assert.equal(wrong.status, 401);
      await assert.rejects(connectHttp(h()), /unauthorized/);

      const key = await mint(h(), { label: 'to revoke' });
      const client = await connectHttp(h(), bearer(key.secret));
      assert.equal((await h().req('DELETE', `/v1/admin/keys/${key.id}`, undefined, bearer(ROOT))).status, 200);
      await assert.rejects(client.callTool({ name: 'list_escrows', arguments: {} }), /unauthorized/);
      await client.close();
    });

    test('sandbox agents work as in the REST API: a minted key registers its own, and another key cannot act with them', async () => {
      const a = await connectHttp(h(), bearer((await mint(h(), { label: 'agents a' })).secret));
      const b = await connectHttp(h(), bearer((await mint(h(), { label: 'agents b' })).secret));
      const payer = await ok(a, 'create_agent', { label: 'a payer' });
      const payee = await ok(a, 'create_agent', { label: 'a payee' });
      const e = await ok(a, 'create_escrow', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      });
      assert.equal(e.payer.publicKey, payer.publicKey);
      const other = await ok(b, 'create_agent', {});
      assert.equal(
        await fails(
          b,
          'create_escrow',
          { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: other.id, payeeAgentId: payee.id },
          'not_found',
        ),
        `payeeAgentId: no agent ${payee.id}`,
      );
      await a.close();
      await b.close();
    });

    test('a minted key sees and acts on its own escrows only; root sees all', async () => {
      const a = await connectHttp(h(), bearer((await mint(h(), { label: 'tenant a' })).secret));
      const b = await connectHttp(h(), bearer((await mint(h(), { label: 'tenant b' })).secret));
      const root = await connectHttp(h(), bearer(ROOT));
      const mine = await ok(a, 'create_escrow', escrowArgs());
      assert.equal((await ok(a, 'fund_escrow', { escrowId: mine.id })).state, 'funded');
      for (const [name, args] of [
        ['get_escrow', {}],
        ['fund_escrow', {}],
        ['refund_escrow', {}],
        [
          'open_dispute',
          {
            party: 'ab'.repeat(32),
            signedAt: new Date().toISOString(),
            signature: { signer: 'ab'.repeat(32), signature: 'cd'.repeat(64) },
          },
        ],
      ] as Array<[string, Record<string, unknown>]>) {
        assert.equal(await fails(b, name, { escrowId: mine.id, ...args }, 'not_found'), `no escrow ${mine.id}`, name);
      }
      assert.ok(!(await ok(b, 'list_escrows', {})).escrows.some((e: { id: string }) => e.id === mine.id));
      assert.ok((await ok(a, 'list_escrows', {})).escrows.some((e: { id: string }) => e.id === mine.id));
      assert.equal((await ok(root, 'get_escrow', { escrowId: mine.id })).state, 'funded');
      // b's attempts changed nothing.
      assert.equal((await h().req('GET', `/v1/escrows/${mine.id}/trail`, undefined, bearer(ROOT))).body.entries.length, 2);
      const refunded = await ok(a, 'refund_escrow', { escrowId: mine.id });
      await fails(b, 'get_proof', { proofId: refunded.id }, 'not_found');
      await fails(b, 'get_bundle', { proofId: refunded.id }, 'not_found');
      assert.equal((await ok(a, 'get_bundle', { proofId: refunded.id })).proof.id, refunded.id);
      for (const c of [a, b, root]) await c.close();
    });

    test("each tool call spends the key's budget as its REST request does; the MCP exchange itself spends none", async () => {
      const key = await mint(h(), { label: 'small budget', rateLimitMax: 3 });
      const client = await connectHttp(h(), bearer(key.secret));
      await client.listTools();
      const e = await ok(client, 'create_escrow', escrowArgs());
      await ok(client, 'get_escrow', { escrowId: e.id });
      await ok(client, 'get_escrow', { escrowId: e.id });
      assert.match(await fails(client, 'get_escrow', { escrowId: e.id }, 'rate_limited'), /./);
      // The REST API sees the same spent budget.
      assert.equal((await h().req('GET', `/v1/escrows/${e.id}`, undefined, bearer(key.secret))).status, 429);
      await client.close();
    });
  },
  HOSTED,
);
