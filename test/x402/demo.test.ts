import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeStores, expectError, makeHarness } from '../harness.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import {
  createPaymentHeader,
  createPaymentHeaderV2,
  decodeBase64Json,
  decodePaymentResponse,
  generateKeys,
  verifyBundle,
  verifyInclusion,
  verifyProof,
  type Bundle,
  type IssuerKey,
} from '@escrow-settlement/client';
import { counts, DEMO, expectRefusal, offer, pay, requiredV2 } from './helpers.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describeStores('x402 demo', (h) => {
  test('without a payment header the route answers 402 payment_required with the offer in the body and in PAYMENT-REQUIRED', async () => {
    const r = await h().req('GET', DEMO);
    expectRefusal(r, 'payment_required');
    const req = r.body.accepts[0];
    assert.deepEqual(Object.keys(req).sort(), [
      'asset',
      'description',
      'maxAmountRequired',
      'maxTimeoutSeconds',
      'mimeType',
      'network',
      'payTo',
      'resource',
      'scheme',
    ]);
    assert.equal(req.scheme, 'proof-sandbox');
    assert.equal(req.network, 'proof-local');
    assert.equal(req.maxAmountRequired, '0.01');
    assert.equal(
      req.resource,
      'http://127.0.0.1:4280/v1/x402/demo',
      'PUBLIC_URL (default: the listening address) + the route, never the Host the request came to',
    );
    assert.equal(req.mimeType, 'application/json');
    assert.match(req.payTo, /^[0-9a-f]{64}$/);
    assert.equal(req.maxTimeoutSeconds, 60);
    assert.equal(req.asset, 'USDC');
    assert.equal(r.headers.get('cache-control'), 'no-store');
  });

  test('the demo payee key is held in the database: the same payTo on every request and on another instance', async () => {
    const first = await offer(h());
    assert.equal((await offer(h())).payTo, first.payTo);
    const other = await makeHarness(h().kind, {}, { db: h().db });
    assert.equal((await offer(other)).payTo, first.payTo);
    const keys = await h().db.query(`SELECT public_key FROM held_party_keys WHERE name = 'x402-payee'`);
    assert.deepEqual(
      keys.map((k) => k.public_key),
      [first.payTo],
    );
  });

  test('a payment built with createPaymentHeader runs the whole lifecycle and its proof verifies offline with the client module', async () => {
    const requirements = await offer(h());
    const payer = generateKeys();
    const before = await counts(h());
    const r = await pay(h(), createPaymentHeader(requirements, payer.secretKey));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.resource, 'x402-demo');
    const answer = decodePaymentResponse(r.headers.get('x-payment-response')!);
    assert.deepEqual(answer, {
      success: true,
      transaction: answer.proofId,
      network: 'proof-local',
      payer: payer.publicKey,
      escrowId: answer.escrowId,
      proofId: answer.proofId,
      outcome: 'released',
    });
    assert.deepEqual(
      decodePaymentResponse(r.headers.get('payment-response')!),
      { ...answer, network: 'proof:local' },
      'the v2 name carries the same settlement, with the CAIP-2 network',
    );

    // The escrow is real: payer = from, payee = the demo payee, amount = value, terms = a hash check on the resource.
    const e = (await h().req('GET', `/v1/escrows/${answer.escrowId}`)).body;
    assert.equal(e.state, 'settled');
    assert.equal(e.custody.status, 'settled');
    assert.equal(e.payer.publicKey, payer.publicKey);
    assert.equal(e.payee.publicKey, requirements.payTo);
    assert.equal(e.amount, '0.01');
    assert.equal(e.asset, 'USDC');
    assert.deepEqual(e.terms.checks, [{ kind: 'hash', expected: sha(canonicalize(r.body)) }]);
    const events = (await h().req('GET', `/v1/escrows/${answer.escrowId}/events`)).body.events;
    assert.deepEqual(
      events.map((x: { event: string }) => x.event),
      ['escrow.created', 'escrow.funded', 'delivery.submitted', 'verdict.passed', 'proof.issued'],
    );
    // The closing's entry carries the end of its refund window (30 days after the proof by default).
    const { refundDeadline, ...closing } = events[4].data;
    assert.deepEqual(closing, { proofId: answer.proofId, outcome: 'released' });
    assert.equal(Date.parse(refundDeadline) - Date.parse(events[4].at), 30 * 86_400_000);
    assert.equal((await h().req('GET', `/v1/escrows/${answer.escrowId}/trail`)).body.intactUpTo, null);

    // Offline: the bundle alone, checked against issuer keys pinned from the well-known document.
    const bundle = (await h().req('GET', `/v1/proofs/${answer.proofId}/bundle`)).body as Bundle;
    const pinned = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys as IssuerKey[];
    const full = verifyBundle(bundle, { trustedKeys: pinned });
    assert.equal(full.ok, true, JSON.stringify(full.checks.filter((c) => !c.ok)));
    assert.equal(verifyProof(bundle.proof, { trustedKeys: pinned }).ok, true);
    assert.equal(verifyInclusion(bundle.proof, bundle.inclusion).ok, true);
    assert.equal(bundle.proof.id, answer.proofId);
    assert.equal(bundle.proof.payer, payer.publicKey);
    assert.equal(bundle.proof.payee, requirements.payTo);
    assert.equal(bundle.proof.deliveryHash, sha(canonicalize(r.body)));

    const after = await counts(h());
    assert.deepEqual(after, { escrows: before.escrows + 1, proofs: before.proofs + 1, nonces: before.nonces + 1, log: before.log + 1 });
    const nonce = decodeBase64Json<any>(createPaymentHeader(requirements, payer.secretKey)).payload.authorization.nonce;
    assert.match(nonce, /^[0-9a-f]{64}$/, 'createPaymentHeader draws a fresh 32-byte nonce');
  });

  test('replaying a payment that settled is payment_invalid and settles nothing more', async () => {
    const payer = generateKeys();
    const header = createPaymentHeader(await offer(h()), payer.secretKey);
    assert.equal((await pay(h(), header)).status, 200);
    const before = await counts(h());
    const again = await pay(h(), header);
    assert.match(expectRefusal(again, 'payment_invalid'), /nonce .* already used/);
    // The same nonce paid through x402 v2 is the same payment.
    const { nonce } = decodeBase64Json<any>(header).payload.authorization;
    const v2 = createPaymentHeaderV2(requiredV2(await h().req('GET', DEMO)), payer.secretKey, { nonce });
    assert.match(expectRefusal(await pay(h(), v2, 'PAYMENT-SIGNATURE'), 'payment_invalid'), /already used/);
    assert.deepEqual(await counts(h()), before);
  });

  test('a value above the price is refused, not kept (docs/security.md "x402 demo")', async () => {
    const r = await pay(h(), createPaymentHeader(await offer(h()), generateKeys().secretKey, { value: '2.5' }));
    assert.equal(r.status, 402, r.text);
    assert.equal(r.body.error.code, 'payment_invalid');
    assert.equal(r.headers.get('x-payment-response'), null);
  });

  test('the payment writes an outbox row per event for each registered webhook, in the same transaction', async () => {
    const url = 'http://127.0.0.1:9/x402-hook';
    assert.equal((await h().req('POST', '/v1/webhooks', { url })).status, 201);
    try {
      const r = await pay(h(), createPaymentHeader(await offer(h()), generateKeys().secretKey));
      const { escrowId } = decodePaymentResponse(r.headers.get('x-payment-response')!);
      const rows = await h().db.query('SELECT idx FROM outbox WHERE escrow_id = $1 AND url = $2 ORDER BY idx', [escrowId, url]);
      assert.deepEqual(
        rows.map((x) => Number(x.idx)),
        [0, 1, 2, 3, 4],
      );
    } finally {
      await h().req('DELETE', '/v1/webhooks', { url });
    }
  });

  test('when custody cannot settle, the answer is 502 custody_failed, nothing is kept, and the same payment settles later', async () => {
    const header = createPaymentHeader(await offer(h()), generateKeys().secretKey);
    const before = await counts(h());
    await h().req('POST', '/v1/sandbox/custody/fail-next', { count: 1 });
    try {
      const r = await pay(h(), header);
      expectError(r, 502, 'custody_failed');
      assert.deepEqual(await counts(h()), before, 'no escrow, proof, leaf or nonce survives the rollback');
    } finally {
      await h().req('POST', '/v1/sandbox/custody/fail-next', { count: 0 });
    }
    assert.equal((await pay(h(), header)).status, 200, 'the nonce was not burnt');
  });
});

describeStores(
  'x402 demo on a hosted deployment',
  (h) => {
    test('the route is a /v1 key route: 401 without a bearer key, the offer with one, and a payment settles with one', async () => {
      expectError(await h().req('GET', DEMO), 401, 'unauthorized');
      const auth = { authorization: 'Bearer x402-root-key-0123456789' };
      const requirements = await offer(h(), auth);
      const r = await pay(h(), createPaymentHeader(requirements, generateKeys().secretKey), 'X-PAYMENT', auth);
      assert.equal(r.status, 200, r.text);
    });
  },
  { API_KEY: 'x402-root-key-0123456789' },
);
