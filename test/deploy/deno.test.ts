// The core under Deno: src/deno.ts serves app.fetch with Deno.serve; one escrow runs to a proof.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NO_DENO, overHttp, startDenoService } from '../process/proc.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { nodeVerifyHex, settled } from '../fixtures.ts';

test('under Deno the service answers /health and runs an escrow to a verified proof, then stops on SIGTERM', {
  skip: NO_DENO,
  timeout: 120_000,
}, async () => {
  const s = await startDenoService();
  try {
    const h = overHttp(s.url);
    const health = await h.req('GET', '/health');
    assert.equal(health.body.ok, true);
    const { proof } = await settled(h);
    const { signature, ...unsigned } = proof;
    assert.ok(nodeVerifyHex(health.body.issuer, canonicalize(unsigned), signature.signature));
    const v = (await h.req('GET', `/v1/proofs/${proof.id}/verify`)).body;
    assert.equal(v.signatureValid && v.trailIntact && v.trailHeadMatches, true);
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
});
