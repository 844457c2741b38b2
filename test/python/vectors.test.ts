// The Python package's shared vectors (python/tests/vectors/, made by test/python/vectors.ts) stay true:
// what the committed files record is what this repository's verifyBundle, signing helpers and
// verifyWebhook say today (test/python/regenerate.test.ts runs the generator afresh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { verifyBundle, type VerifyOptions } from '@escrow-settlement/protocol/verify';
import type { Bundle } from '@escrow-settlement/protocol/types';
import { ml_dsa44 } from '@noble/post-quantum/ml-dsa.js';
import { constantVectors, signedVectors, webhookVectors, type BundleVector } from './vectors.ts';

const read = (name: string) => JSON.parse(readFileSync(new URL(`../../python/tests/vectors/${name}`, import.meta.url), 'utf8'));

const outcome = (e: BundleVector['expected']) => ({ valid: e.valid, checks: e.checks });

test('each committed bundle vector records what verifyBundle says of it today', () => {
  const committed = read('bundles.json') as BundleVector[];
  assert.ok(committed.length >= 50, `${committed.length} bundle vectors`);
  for (const v of committed) {
    const r = verifyBundle(v.bundle as Bundle, v.options as VerifyOptions);
    assert.deepEqual(
      { valid: r.ok, checks: r.checks.map((c) => [c.name, c.ok]) },
      outcome(v.expected),
      `${v.name}: regenerate with npx tsx test/python/vectors.ts`,
    );
    assert.deepEqual(
      v.expected.failed,
      r.checks.filter((c) => !c.ok).map((c) => c.name),
    );
  }
});

test('the committed signed bodies and webhook deliveries are what the TypeScript side makes', () => {
  assert.deepEqual(read('signed.json'), JSON.parse(JSON.stringify(signedVectors())));
  assert.deepEqual(read('webhooks.json'), JSON.parse(JSON.stringify(webhookVectors())));
});

test('the committed tables (ISO 4217 minor units, party signature kinds) are the TypeScript ones', () => {
  const committed = read('constants.json');
  assert.deepEqual(committed, JSON.parse(JSON.stringify(constantVectors())));
  assert.equal(committed.iso4217MinorUnits.HUF, 2);
  assert.ok(committed.partySignatureKinds.includes('refund.request'));
});

test('the committed ML-DSA-44 vectors verify (or not) with @noble/post-quantum as recorded', () => {
  const cases = read('mldsa44.json') as Array<{ name: string; publicKey: string; message: string; signature: string; valid: boolean }>;
  assert.ok(cases.some((c) => c.valid) && cases.some((c) => !c.valid));
  for (const c of cases) {
    const h = (x: string) => new Uint8Array(Buffer.from(x, 'hex'));
    assert.equal(ml_dsa44.verify(h(c.signature), h(c.message), h(c.publicKey)), c.valid, c.name);
  }
});
