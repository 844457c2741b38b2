// The core under Deno: src/deno.ts serves app.fetch with Deno.serve; one escrow runs to a proof.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_DENO, startDenoService } from '../process/proc.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { nodeVerifyHex, PASSING_TERMS } from '../fixtures.ts';

test('under Deno the service answers /health and runs an escrow to a verified proof, then stops on SIGTERM', {
  skip: NO_DENO,
  timeout: 120_000,
}, async () => {
  const s = await startDenoService();
  try {
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${s.url}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    const health = await call('GET', '/health');
    assert.equal(health.body.ok, true);
    const payer = (await call('POST', '/v1/agents', { label: 'payer' })).body;
    const payee = (await call('POST', '/v1/agents', { label: 'payee' })).body;
    const e = (
      await call('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      })
    ).body;
    assert.equal((await call('POST', `/v1/escrows/${e.id}/fund`)).status, 200);
    const d = await call('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 'from deno' } });
    assert.equal(d.status, 201);
    const { signature, ...unsigned } = d.body.proof;
    assert.ok(nodeVerifyHex(health.body.issuer, canonicalize(unsigned), signature.signature));
    const v = (await call('GET', `/v1/proofs/${d.body.proof.id}/verify`)).body;
    assert.equal(v.signatureValid && v.trailIntact && v.trailHeadMatches, true);
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
});
