import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores } from '../harness.ts';
import { createPaymentHeader, decodePaymentResponse, generateKeys, verifyBundle } from '@escrow-settlement/client';
import { counts, expectRefusal, offer, pay } from './helpers.ts';

// Real contention needs real Postgres (TEST_DATABASE_URL): ten connections race for one nonce.
// PGlite has one connection and serialises the requests, so there the same assertions hold trivially.
describeStores('x402 under concurrency', (h) => {
  test('ten concurrent replays of one payment: exactly one 200, nine payment_invalid, one escrow', async () => {
    const header = createPaymentHeader(await offer(h()), generateKeys().secretKey);
    const before = await counts(h());
    const answers = await Promise.all(Array.from({ length: 10 }, () => pay(h(), header)));
    const ok = answers.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, answers.map((r) => `${r.status} ${r.body?.error?.code ?? ''}`).join(', '));
    for (const r of answers.filter((a) => a.status !== 200)) assert.match(expectRefusal(r, 'payment_invalid'), /already used/);
    assert.deepEqual(await counts(h()), {
      escrows: before.escrows + 1,
      proofs: before.proofs + 1,
      nonces: before.nonces + 1,
      log: before.log + 1,
    });
    const { escrowId, proofId } = decodePaymentResponse(ok[0].headers.get('x-payment-response')!);
    const [nonce] = await h().db.query('SELECT escrow_id FROM x402_nonces WHERE escrow_id = $1', [escrowId]);
    assert.ok(nonce, 'the nonce row names the escrow it paid for');
    const bundle = (await h().req('GET', `/v1/proofs/${proofId}/bundle`)).body;
    assert.equal(verifyBundle(bundle, { trustedKeys: (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys }).ok, true);
  });

  test('ten concurrent payments with distinct nonces all settle, each as its own log leaf', async () => {
    const requirements = await offer(h());
    const before = await counts(h());
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => pay(h(), createPaymentHeader(requirements, generateKeys().secretKey))),
    );
    assert.deepEqual(
      answers.map((r) => r.status),
      Array(10).fill(200),
      answers.map((r) => r.text).join('\n'),
    );
    const after = await counts(h());
    assert.equal(after.log, before.log + 10);
    const leaves = await h().db.query('SELECT leaf_index::int AS i FROM proofs ORDER BY leaf_index');
    assert.deepEqual(
      leaves.map((r) => r.i),
      Array.from({ length: after.proofs }, (_, i) => i),
      'leaf indexes are dense: no gaps, no duplicates',
    );
  });
});
