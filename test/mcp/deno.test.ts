// POST /mcp under Deno (src/deno.ts): the SDK's web-standard transport inside the fetch core runs
// there too; the SDK's Client, over real HTTP, creates and funds an escrow through the tools.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NO_DENO, startDenoService } from '../process/proc.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { ok } from './helpers.ts';

test('under Deno, /mcp serves the tools and a tool call runs its route', {
  skip: NO_DENO,
  timeout: 120_000,
}, async () => {
  const s = await startDenoService();
  const client = new Client({ name: 'escrow-settlement-tests', version: '0.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`)));
    assert.equal((await client.listTools()).tools.length, 16);
    const payer = await ok(client, 'create_agent', { label: 'payer' });
    const payee = await ok(client, 'create_agent', { label: 'payee' });
    const e = await ok(client, 'create_escrow', {
      amount: '1',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payeeAgentId: payee.id,
    });
    assert.equal((await ok(client, 'fund_escrow', { escrowId: e.id })).state, 'funded');
    const d = await ok(client, 'submit_delivery', { escrowId: e.id, agentId: payee.id, payload: { title: 'from deno' } });
    const bundle = await ok(client, 'get_bundle', { proofId: d.proof.id });
    assert.equal((await ok(client, 'verify_bundle', { bundle })).valid, false, 'no pinned key: not valid');
    assert.equal((await ok(client, 'verify_bundle', { bundle, trustBundleKeys: true })).valid, true);
  } finally {
    await client.close();
    assert.equal(await s.stop(), 0, s.stderr());
  }
});
