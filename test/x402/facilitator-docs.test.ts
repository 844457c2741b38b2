// docs/x402.md's two examples run as written: its resource server (ports swapped for the test's)
// in front of a real service, and its payer paying it; the payer prints the resource and a proof id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runExamples } from './examples.ts';

const ROOT = join(import.meta.dirname, '../..');

test('docs/x402.md: the 20-line resource server and the 10-line payer complete a payment against the service', {
  timeout: 120_000,
}, async () => {
  const blocks = [...readFileSync(join(ROOT, 'docs/x402.md'), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 2, 'a resource server and a payer');
  await runExamples(blocks[0], blocks[1], async (out, svc) => {
    assert.match(out, /title: 'Q3'/);
    const proofId = /prf_[0-9a-z]{26}/.exec(out)?.[0];
    assert.ok(proofId, out);
    const proof = await (await fetch(`${svc.url}/v1/proofs/${proofId}`)).json();
    assert.equal(proof.outcome, 'released');
  });
});
