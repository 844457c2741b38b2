// The core under Deno: src/deno.ts serves app.fetch with Deno.serve; one escrow runs to a proof.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, startService } from '../process/proc.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { nodeVerifyHex, PASSING_TERMS } from '../fixtures.ts';

// deno comes from the npm registry into an isolated prefix (.ci/run installs it there): npm 11
// writes a lockfile that `npm ci` rejects for deno's per-platform optional packages, so it is not
// a devDependency. DENO_BIN overrides the location.
const DENO = process.env.DENO_BIN ?? join(ROOT, '.tmp/deno/node_modules/.bin/deno');

test('under Deno the service answers /health and runs an escrow to a verified proof, then stops on SIGTERM', {
  skip: !existsSync(DENO) && 'deno not installed: npm install --prefix .tmp/deno deno@2',
  timeout: 120_000,
}, async () => {
  const s = await startService(
    ['run', '-A', '--quiet', 'src/deno.ts'],
    { DATA_DIR: ':memory:', DENO_NO_UPDATE_CHECK: '1' },
    90_000,
    ROOT,
    DENO,
  );
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
