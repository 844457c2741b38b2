// POST /mcp in the open sandbox, through the SDK's own Client: a whole matter from agents to an
// offline-verified bundle, the tools' schemas and hints, and every kind of bad input (docs/mcp.md).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describeStores, type Harness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { COSIGNATURE_ALG, formatVerifierKey } from '@escrow-settlement/protocol/tlog/checkpoint';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { BASE, connectHttp, fails, ok } from './helpers.ts';

const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/** A raw POST /mcp, for what the SDK's client would never send. */
async function rawPost(h: Harness, body: string, headers: Record<string, string> = {}) {
  const res = await h.app.fetch(new Request(`${BASE}/mcp`, { method: 'POST', headers: { ...ACCEPT, ...headers }, body }), {
    ip: '127.0.0.1',
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

describeStores('MCP over Streamable HTTP (sandbox)', (h) => {
  let client: Client;
  before(async () => {
    client = await connectHttp(h());
  });
  after(async () => {
    await client?.close();
  });

  test('lists the tools with schemas from the routes, self-contained output schemas and hints', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(
      names,
      [
        'create_agent',
        'create_escrow',
        'fund_escrow',
        'get_bundle',
        'get_escrow',
        'get_log_checkpoint',
        'get_proof',
        'list_escrows',
        'open_dispute',
        'refund_after_release',
        'refund_escrow',
        'request_refund',
        'resolve_dispute',
        'submit_delivery',
        'submit_evidence',
        'verify_bundle',
      ].sort(),
    );
    const byName = new Map(tools.map((t) => [t.name, t]));
    const create = byName.get('create_escrow')!;
    assert.deepEqual(create.inputSchema.required, ['amount', 'asset', 'terms']);
    assert.equal((create.inputSchema as any).additionalProperties, false);
    assert.ok((create.inputSchema as any).$defs.Terms, 'terms refers to a $defs it carries');
    const delivery = byName.get('submit_delivery')!;
    assert.deepEqual(delivery.inputSchema.required, ['escrowId', 'payload'], "both forms' fields, the common ones required");
    for (const f of ['agentId', 'submittedAt', 'signature']) assert.ok(delivery.inputSchema.properties![f], f);
    for (const t of tools) {
      assert.equal(t.outputSchema?.type, 'object', t.name);
      assert.ok(!JSON.stringify(t).includes('#/components/'), `${t.name} has no reference outside itself`);
      const a = t.annotations!;
      if (/^(get|list|verify)_/.test(t.name)) assert.equal(a.readOnlyHint, true, t.name);
      else
        assert.deepEqual(
          [a.readOnlyHint, a.destructiveHint],
          [false, ['fund_escrow', 'submit_delivery', 'refund_escrow', 'refund_after_release', 'resolve_dispute'].includes(t.name)],
          `${t.name}: destructive when it moves money or may close a matter`,
        );
      // Every property at every depth has an explicit type; an object given by $ref says so beside it.
      const untyped: string[] = [];
      const walk = (path: string, node: unknown) => {
        if (node === null || typeof node !== 'object') return;
        if (Array.isArray(node)) return node.forEach((n, i) => walk(`${path}/${i}`, n));
        const props = (node as { properties?: Record<string, { type?: unknown }> }).properties;
        if (props) for (const [k, v] of Object.entries(props)) if (v.type === undefined) untyped.push(`${path}/properties/${k}`);
        for (const [k, v] of Object.entries(node)) walk(`${path}/${k}`, v);
      };
      walk('', t.inputSchema);
      assert.deepEqual(untyped, [], `${t.name}: properties without a type`);
    }
    const props = (name: string) => byName.get(name)!.inputSchema.properties as Record<string, { type?: unknown; $ref?: string }>;
    assert.deepEqual(props('create_escrow').terms, { type: 'object', $ref: '#/$defs/Terms' });
    assert.deepEqual(props('resolve_dispute').shares, { type: 'object', $ref: '#/$defs/Shares' });
    assert.equal(props('submit_delivery').payload.type, 'object');
    assert.equal(byName.get('fund_escrow')!.annotations!.idempotentHint, true);
    assert.equal(byName.get('create_escrow')!.annotations!.idempotentHint, false);
    assert.equal(byName.get('submit_evidence')!.annotations!.idempotentHint, false);
  });

  test('a whole matter: agents, escrow, funding, a passing delivery, the bundle verified offline', async () => {
    const payer = await ok(client, 'create_agent', { label: 'buyer' });
    const payee = await ok(client, 'create_agent', { label: 'seller' });
    assert.match(payer.id, /^agt_/);
    const escrow = await ok(client, 'create_escrow', {
      amount: '12.5',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payeeAgentId: payee.id,
    });
    assert.equal(escrow.state, 'created');
    assert.equal((await ok(client, 'fund_escrow', { escrowId: escrow.id })).state, 'funded');
    const d = await ok(client, 'submit_delivery', { escrowId: escrow.id, agentId: payee.id, payload: { title: 'the report' } });
    assert.equal(d.verdict.passed, true);
    assert.equal(d.proof.outcome, 'released');
    assert.equal((await ok(client, 'get_escrow', { escrowId: escrow.id })).state, 'settled');
    assert.deepEqual(await ok(client, 'get_proof', { proofId: d.proof.id }), d.proof);
    // The same body the REST route answers.
    assert.deepEqual(await ok(client, 'get_escrow', { escrowId: escrow.id }), (await h().req('GET', `/v1/escrows/${escrow.id}`)).body);
    const listed = await ok(client, 'list_escrows', { state: 'settled', limit: 100 });
    assert.ok(listed.escrows.some((e: { id: string }) => e.id === escrow.id));
    assert.ok('nextCursor' in listed);

    const bundle = await ok(client, 'get_bundle', { proofId: d.proof.id });
    const issuer = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys.map((k: { publicKey: string }) => k.publicKey);
    const v = await ok(client, 'verify_bundle', { bundle, trustedKeys: issuer });
    assert.equal(v.valid, true, JSON.stringify(v.checks.filter((c: { ok: boolean }) => !c.ok)));
    // disclose: 'payload', as the REST query takes it: the payload travels, and the verdict is re-run whole.
    const disclosed = await ok(client, 'get_bundle', { proofId: d.proof.id, disclose: 'payload' });
    assert.deepEqual(disclosed.disclosed, (await h().req('GET', `/v1/proofs/${d.proof.id}/bundle?disclose=payload`)).body.disclosed);
    assert.equal(bundle.disclosed, undefined);
    const replay = (await ok(client, 'verify_bundle', { bundle: disclosed, trustedKeys: issuer })).checks.find(
      (c: { name: string }) => c.name === 'verdict.replay',
    );
    assert.equal(replay.ok, true, replay.detail);
    assert.match(replay.detail, /^re-ran all \d+ checks of the terms against the disclosed payload/);
    await fails(client, 'get_bundle', { proofId: d.proof.id, disclose: 'trail' }, 'bad_request');
    assert.ok(v.checks.some((c: { name: string }) => c.name === 'proof.issuer.trusted'));
    // Without pinned keys the bundle is not valid: issuer.trust fails, saying how to pin.
    const unpinned = await ok(client, 'verify_bundle', { bundle });
    assert.equal(unpinned.valid, false);
    const trust = unpinned.checks.find((c: { name: string }) => c.name === 'issuer.trust');
    assert.equal(trust.ok, false);
    assert.match(trust.detail, /no trusted issuer key given: pin the issuer keys \(trustedKeys.*or pass trustBundleKeys: true/);
    assert.deepEqual(
      unpinned.checks.filter((c: { ok: boolean }) => !c.ok).map((c: { name: string }) => c.name),
      ['issuer.trust'],
    );
    // Only when asked does it accept the bundle's own keys, and the issuer.trust check says so.
    const selfTrust = await ok(client, 'verify_bundle', { bundle, trustBundleKeys: true });
    assert.equal(selfTrust.valid, true);
    assert.match(selfTrust.checks.find((c: { name: string }) => c.name === 'issuer.trust').detail, /^WARNING/);
    assert.match(
      await fails(client, 'verify_bundle', { bundle, trustedKeys: issuer, trustBundleKeys: true }, 'bad_request'),
      /trustBundleKeys: give trustedKeys or trustBundleKeys, not both/,
    );
    assert.match(
      await fails(client, 'verify_bundle', { bundle, trustBundleKeys: 'yes' }, 'bad_request'),
      /trustBundleKeys: must be true or false/,
    );
    // A tampered bundle fails, naming the check.
    const forged = structuredClone(bundle);
    forged.proof.amount = '1000';
    const bad = await ok(client, 'verify_bundle', { bundle: forged, trustedKeys: issuer });
    assert.equal(bad.valid, false);
    assert.ok(bad.checks.some((c: { name: string; ok: boolean }) => c.name === 'proof.signature' && !c.ok));
    // Another issuer pinned: the bundle is not trusted.
    const other = await ok(client, 'verify_bundle', { bundle, trustedKeys: ['11'.repeat(32)] });
    assert.equal(other.valid, false);
    // A pinned witness: this deployment has none, so the bundle's checkpoint carries no cosignature from it.
    const witness = formatVerifierKey('witness.example/w1', generateKeyPair().publicKey, COSIGNATURE_ALG);
    const unwitnessed = await ok(client, 'verify_bundle', { bundle, trustedKeys: issuer, witnesses: [witness], quorum: 1 });
    assert.equal(unwitnessed.valid, false);
    assert.ok(
      unwitnessed.checks.some((c: { name: string; ok: boolean }) => c.name.startsWith('checkpoint.') && !c.ok),
      JSON.stringify(unwitnessed.checks),
    );
    assert.match(await fails(client, 'verify_bundle', { bundle, quorum: 1 }, 'bad_request'), /quorum: needs witnesses/);
    assert.match(
      await fails(client, 'verify_bundle', { bundle, witnesses: ['not a key'] }, 'bad_request'),
      /witnesses\/0: not a witness verifier key/,
    );

    const cp = await ok(client, 'get_log_checkpoint');
    assert.equal(cp.checkpoint, (await h().req('GET', '/v1/log/checkpoint')).text);
  });

  test("a refund and a dispute closed by the sandbox agents' co-signature", async () => {
    const payer = await ok(client, 'create_agent', {});
    const payee = await ok(client, 'create_agent', {});
    const base = { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id };
    const r = await ok(client, 'create_escrow', base);
    await ok(client, 'fund_escrow', { escrowId: r.id });
    assert.equal((await ok(client, 'refund_escrow', { escrowId: r.id })).outcome, 'refunded');

    // After release: the payer asks, the payee refunds part (docs/protocol.md §24.4, §24.5).
    const s = await ok(client, 'create_escrow', base);
    await ok(client, 'fund_escrow', { escrowId: s.id });
    const released = await ok(client, 'submit_delivery', { escrowId: s.id, agentId: payee.id, payload: { title: 't' }, amount: '2' });
    assert.deepEqual(released.proof.payouts, { payee: '2', payer: '1', fee: '0' });
    const asked = await ok(client, 'request_refund', { escrowId: s.id, amount: '1', reason: 'late', agentIds: [payer.id] });
    assert.equal(asked.refundRequest.amount, '1');
    const refunded = await ok(client, 'refund_after_release', { escrowId: s.id, amount: '1', agentIds: [payee.id] });
    assert.equal(refunded.proof.outcome, 'refunded-after-release');
    assert.equal(refunded.proof.refundedTotal, '1');
    await fails(client, 'refund_after_release', { escrowId: s.id, amount: '1.000001', agentIds: [payee.id] }, 'invalid_state');

    const e = await ok(client, 'create_escrow', base);
    await ok(client, 'fund_escrow', { escrowId: e.id });
    const failed = await ok(client, 'submit_delivery', { escrowId: e.id, agentId: payee.id, payload: { body: 'no title' } });
    assert.equal(failed.verdict.passed, false);
    const opened = await ok(client, 'open_dispute', { escrowId: e.id, agentId: payee.id, reason: 'the title was implied' });
    assert.equal(opened.state, 'open');
    const ev = await ok(client, 'submit_evidence', { escrowId: e.id, agentId: payer.id, note: 'it was not', payload: { x: 1 } });
    assert.equal(ev.state, 'under-review');
    const resolved = await ok(client, 'resolve_dispute', {
      escrowId: e.id,
      outcome: 'split',
      shares: { payerBps: 4000, payeeBps: 6000 },
      agentIds: [payer.id, payee.id],
    });
    assert.equal(resolved.dispute.ruling.decidedBy, 'co-signature');
    assert.equal(resolved.proof.outcome, 'split');
    // A second ruling changes nothing: the lifecycle refuses it, as REST does.
    await fails(client, 'resolve_dispute', { escrowId: e.id, outcome: 'release', agentIds: [payer.id, payee.id] }, 'invalid_state');
  });

  test('arguments the route refuses are isError with its 400 envelope naming the field', async () => {
    const msg = await fails(client, 'create_escrow', { amount: 5, asset: 'USDC', terms: PASSING_TERMS }, 'bad_request');
    assert.match(msg, /amount/);
    assert.match(
      await fails(client, 'create_escrow', { amount: '5', asset: 'USDC', terms: PASSING_TERMS, colour: 'red' }, 'bad_request'),
      /colour/,
    );
    assert.match(
      await fails(
        client,
        'create_escrow',
        { amount: '5', asset: 'USDC', terms: { description: 'x', checks: [{ kind: 'nope' }] } },
        'bad_request',
      ),
      /checks/,
    );
    assert.match(await fails(client, 'fund_escrow', {}, 'bad_request'), /escrowId is required/);
    assert.match(await fails(client, 'fund_escrow', { escrowId: 7 }, 'bad_request'), /escrowId/);
    assert.match(await fails(client, 'get_escrow', { escrowId: 'esc_x', verbose: true }, 'bad_request'), /verbose: unknown argument/);
    assert.match(await fails(client, 'list_escrows', { state: 'lost' }, 'bad_request'), /state/);
    assert.match(await fails(client, 'list_escrows', { limit: 0 }, 'bad_request'), /limit/);
    assert.match(await fails(client, 'verify_bundle', { bundle: {}, trustedKeys: ['xyz'] }, 'bad_request'), /trustedKeys\/0/);
    assert.match(await fails(client, 'verify_bundle', { trustedKeys: ['ab'.repeat(32)] }, 'bad_request'), /bundle: required/);
    // A path argument that is not a well-formed id of its kind is 400 naming it, and never reaches
    // another route ('.' made get_escrow the list, get_bundle GET /v1/proofs/bundle).
    const tools = (await client.listTools()).tools;
    const withPathArg = tools.filter(
      (t) => 'escrowId' in (t.inputSchema.properties ?? {}) || 'proofId' in (t.inputSchema.properties ?? {}),
    );
    assert.equal(withPathArg.length, 11);
    for (const t of withPathArg) {
      const field = 'escrowId' in (t.inputSchema.properties ?? {}) ? 'escrowId' : 'proofId';
      const prefix = field === 'escrowId' ? 'esc' : 'prf';
      for (const bad of [
        '.',
        '..',
        '',
        '/',
        '?',
        '#',
        '%',
        `${prefix}_a/b`,
        `${prefix}_..`,
        `${prefix}_a?x=1`,
        `${prefix}_a#b`,
        `${prefix}_%2e%2e`,
        `${prefix}_`,
        'esc_../../v1/admin/keys',
        `${prefix === 'esc' ? 'prf' : 'esc'}_01`,
      ]) {
        const message = await fails(client, t.name, { [field]: bad }, 'bad_request');
        assert.match(message, new RegExp(`^${field}: must be an id of the form ${prefix}_`), `${t.name} ${JSON.stringify(bad)}`);
      }
    }
    await fails(client, 'get_escrow', { escrowId: 'esc_unknown' }, 'not_found');
    await fails(client, 'get_proof', { proofId: 'prf_unknown' }, 'not_found');
    const created = await ok(client, 'create_escrow', {
      amount: '1',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: (await ok(client, 'create_agent')).id,
      payeeAgentId: (await ok(client, 'create_agent')).id,
    });
    await fails(client, 'refund_escrow', { escrowId: created.id }, 'invalid_state');
  });

  test('an unknown tool is a JSON-RPC error, not a result', async () => {
    await assert.rejects(
      client.callTool({ name: 'drain_escrow', arguments: {} }),
      (e: unknown) => e instanceof McpError && e.code === ErrorCode.InvalidParams && /unknown tool/.test(e.message),
    );
  });

  test('oversized arguments are refused as the REST route refuses them; an oversized message before it is read', async () => {
    const payee = await ok(client, 'create_agent');
    const e = await ok(client, 'create_escrow', {
      amount: '1',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: (await ok(client, 'create_agent')).id,
      payeeAgentId: payee.id,
    });
    await ok(client, 'fund_escrow', { escrowId: e.id });
    const big = 'x'.repeat(1100 * 1024);
    assert.match(
      await fails(client, 'submit_delivery', { escrowId: e.id, agentId: payee.id, payload: { title: big } }, 'payload_too_large'),
      /1 MB/,
    );
    assert.equal((await ok(client, 'get_escrow', { escrowId: e.id })).state, 'funded', 'nothing was delivered');
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_escrow', arguments: { escrowId: 'x'.repeat(2100 * 1024) } },
    });
    const r = await rawPost(h(), huge);
    assert.equal(r.status, 413);
    assert.equal(r.body.error.code, -32600);
  });

  test('a malformed message gets a JSON-RPC error, never a 500', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    for (const [body, code, why] of [
      ['{"jsonrpc": "2.0", "id": 1, "method":', -32700, /Parse error/],
      ['', -32700, /empty body/],
      ['{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', -32700, /duplicate/i],
      ['{"hello": "world"}', -32700, /JSON-RPC/],
      ['[]', -32600, /empty batch/],
    ] as Array<[string, number, RegExp]>) {
      const r = await rawPost(h(), body);
      assert.equal(r.status, 400, `${body}: ${r.text}`);
      assert.equal(r.body.jsonrpc, '2.0');
      assert.equal(r.body.error.code, code, body);
      assert.match(r.body.error.message, why, body);
    }
    const wrongType = await rawPost(h(), JSON.stringify(init), { 'content-type': 'text/plain' });
    assert.equal(wrongType.status, 415);
    const noAccept = await rawPost(h(), JSON.stringify(init), { accept: 'application/json' });
    assert.equal(noAccept.status, 406);
    // A well-formed request to a method the server lacks: a JSON-RPC error in a 200 answer.
    const unknown = await rawPost(h(), JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'resources/list' }), {
      'mcp-protocol-version': '2025-06-18',
    });
    assert.equal(unknown.status, 200, unknown.text);
    assert.equal(unknown.body.error.code, ErrorCode.MethodNotFound);
    // tools/call with arguments that are not an object.
    const badArgs = await rawPost(
      h(),
      JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'get_escrow', arguments: 'esc_1' } }),
      { 'mcp-protocol-version': '2025-06-18' },
    );
    assert.equal(badArgs.body.error.code, ErrorCode.InvalidParams, badArgs.text);
    // A notification is accepted with 202 and no body.
    const note = await rawPost(h(), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    assert.equal(note.status, 202);
  });

  test('GET and DELETE /mcp are 405 with Allow (a stateless server keeps no stream or session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await h().req(method, '/mcp', undefined, { accept: 'text/event-stream' });
      assert.equal(r.status, 405, method);
      assert.equal(r.body.error.code, 'method_not_allowed');
      assert.match(r.headers.get('allow')!, /POST/);
    }
  });

  test("the API's cross-site and Host rules hold for /mcp", async () => {
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const cross = await rawPost(h(), init, { origin: 'https://evil.example' });
    assert.equal(cross.status, 403);
    assert.equal(cross.body.error.code, 'forbidden');
    const rebound = await rawPost(h(), init, { host: 'evil.example' });
    assert.equal(rebound.status, 421);
    const same = await rawPost(h(), init, {
      origin: 'http://localhost:4280',
      host: 'localhost:4280',
      'mcp-protocol-version': '2025-06-18',
    });
    assert.equal(same.status, 200, same.text);
    assert.ok(same.body.result.tools.length > 0);
  });
});

describeStores(
  'MCP from a web page of an allowed origin (CORS)',
  (h) => {
    test('the preflight allows the MCP headers and the answer carries the CORS headers', async () => {
      const pre = await h().req('OPTIONS', '/mcp', undefined, {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, mcp-protocol-version',
      });
      assert.equal(pre.status, 204);
      const allowed = pre.headers.get('access-control-allow-headers')!.split(', ');
      for (const hd of ['content-type', 'mcp-protocol-version', 'authorization']) assert.ok(allowed.includes(hd), hd);
      const r = await rawPost(h(), JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), {
        origin: 'https://app.example',
        'mcp-protocol-version': '2025-06-18',
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('access-control-allow-origin'), 'https://app.example');
    });
  },
  { CORS_ORIGINS: 'https://app.example' },
);
