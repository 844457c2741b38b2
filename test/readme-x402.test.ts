// README.md's x402 examples run as written: the resource server captures part of the hold with a
// fee and refunds part of it, the payer pays and prints the proof id and the payment's status.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { runExamples } from './x402/examples.ts';

test('README.md "x402": a partial capture with a fee, refunded in part, as the status route tells the payer', {
  timeout: 120_000,
}, async () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('\n## x402\n'), readme.indexOf('\n## ', readme.indexOf('\n## x402\n') + 1));
  const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 2, 'a resource server and a payer');
  await runExamples(blocks[0], blocks[1], async (out, svc) => {
    const proofId = /prf_[0-9a-z]{26}/.exec(out)?.[0];
    assert.ok(proofId, out);
    const proof = await (await fetch(`${svc.url}/v1/proofs/${proofId}`)).json();
    assert.equal(proof.outcome, 'released');
    assert.equal(proof.captured, '0.004');
    assert.equal(proof.fee.bps, 200);
    assert.match(out, /status: 'partially_refunded'/);
    assert.match(out, /captured: '4000'/);
    assert.match(out, /refunded: '1000'/);
    assert.match(out, /fee: '80'/);
  });
});
