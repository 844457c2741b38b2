// Every consent in the bundle (docs/protocol.md §11.4): facilitator matters collected, captured, voided
// and disputed through the front door; each bundle verifies with every consent present and fails
// parties.complete with any one removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, type Harness } from '../harness.ts';
import {
  generateKeys,
  signBody,
  signDisputeAction,
  signRuling,
  verifyBundle,
  type Bundle,
  type IssuerKey,
  type Terms,
} from '@escrow-settlement/client';
import { signCapture, signCollect, signVoid } from '@escrow-settlement/client/x402/authCapture';

const TERMS: Terms = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const S = '/v1/x402/facilitator/settle';

/** One facilitator payment: the collect request and a settle for its later payloads. */
function payment(h: Harness) {
  const payer = generateKeys();
  const payee = generateKeys();
  const req = {
    scheme: 'auth-capture',
    network: 'escrow:sandbox',
    asset: 'USDC',
    amount: '10000',
    payTo: payee.publicKey,
    maxTimeoutSeconds: 60,
    extra: { paymentFlow: 'escrow', terms: TERMS },
  };
  const settle = (payload: unknown) =>
    h.req('POST', S, {
      x402Version: 2,
      paymentPayload: { x402Version: 2, resource: { url: 'https://shop.example/report' }, accepted: req, payload },
      paymentRequirements: req,
    });
  return { payer, payee, settle };
}

async function collected(h: Harness) {
  const p = payment(h);
  const c = await p.settle(
    signCollect(p.payer.secretKey, {
      to: p.payee.publicKey,
      value: '10000',
      asset: 'USDC',
      resource: 'https://shop.example/report',
      terms: TERMS,
      maxTimeoutSeconds: 60,
    }),
  );
  assert.equal(c.body.success, true, c.text);
  return { ...p, escrowId: c.body.transaction as string };
}

async function bundleOf(h: Harness, proofId: string): Promise<{ bundle: Bundle; pinned: IssuerKey[] }> {
  const b = await h.req('GET', `/v1/proofs/${proofId}/bundle`);
  assert.equal(b.status, 200, b.text);
  return { bundle: b.body, pinned: (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys };
}

async function capturedMatter(h: Harness) {
  const p = await collected(h);
  const r = await p.settle(signCapture(p.payee.secretKey, { escrowId: p.escrowId, payload: { title: 'Q3' } }));
  assert.equal(r.body.success, true, r.text);
  return { proofId: r.body.transaction as string, kinds: ['x402', 'delivery'] };
}

async function voidedMatter(h: Harness) {
  const p = await collected(h);
  const r = await p.settle(signVoid(p.payee.secretKey, { escrowId: p.escrowId }));
  assert.equal(r.body.success, true, r.text);
  return { proofId: r.body.transaction as string, kinds: ['x402', 'x402.void'] };
}

/** Collected, captured with a failing delivery, disputed by the payer, ruled by both parties' signatures. */
async function disputedMatter(h: Harness) {
  const p = await collected(h);
  const failed = await p.settle(signCapture(p.payee.secretKey, { escrowId: p.escrowId, payload: { body: 'untitled' } }));
  assert.equal(failed.body.errorReason, 'verdict_failed', failed.text);
  const id = p.escrowId;
  const d = await h.req(
    'POST',
    `/v1/escrows/${id}/dispute`,
    signDisputeAction(p.payer.secretKey, { escrowId: id, action: 'dispute.open', reason: 'no title' }),
  );
  assert.equal(d.status, 201, d.text);
  const ruling = { escrowId: id, disputeId: d.body.id, outcome: 'refund' as const, rationale: 'no title' };
  const r = await h.req('POST', `/v1/escrows/${id}/dispute/resolve`, {
    outcome: 'refund',
    rationale: 'no title',
    signatures: [signRuling(p.payer.secretKey, ruling), signRuling(p.payee.secretKey, ruling)],
  });
  assert.equal(r.status, 200, r.text);
  return { proofId: r.body.proof.id as string, kinds: ['x402', 'delivery', 'dispute.open', 'ruling', 'ruling'], p };
}

const MATTERS = [
  ['a captured facilitator payment', capturedMatter],
  ['a voided facilitator payment', voidedMatter],
  ['a disputed facilitator payment with a co-signed ruling', disputedMatter],
] as const;

describeStores('every consent in the bundle', (h) => {
  for (const [what, make] of MATTERS) {
    test(`${what}: verifies with every consent carried, and fails parties.complete with any one removed`, async () => {
      const { proofId, kinds } = await make(h());
      const { bundle, pinned } = await bundleOf(h(), proofId);
      assert.deepEqual(
        bundle.parties!.signatures.map((s) => s.kind),
        kinds,
      );
      const whole = verifyBundle(bundle, { trustedKeys: pinned });
      assert.equal(whole.ok, true, JSON.stringify(whole.checks.filter((c) => !c.ok)));
      assert.deepEqual(
        whole.checks.filter((c) => c.name.startsWith('parties')).map((c) => [c.name, c.ok]),
        [...kinds.map((k, i) => [`parties[${i}].${k}`, true]), ['parties.complete', true]],
      );
      for (let i = 0; i < kinds.length; i++) {
        const b = structuredClone(bundle);
        b.parties!.signatures.splice(i, 1);
        const bad = verifyBundle(b, { trustedKeys: pinned }).checks.filter((c) => !c.ok);
        assert.deepEqual(
          bad.map((c) => c.name),
          ['parties.complete'],
          `without ${kinds[i]} (${i})`,
        );
      }
    });
  }

  test("the trail records the payer's authorization hash and the payee's void; a REST refund records none", async () => {
    const { proofId } = await voidedMatter(h());
    const { bundle, pinned } = await bundleOf(h(), proofId);
    const auth = bundle.parties!.signatures[0];
    const created = bundle.trail[0].body as { x402: { authorizationHash: string } };
    assert.match(created.x402.authorizationHash, /^[0-9a-f]{64}$/);
    const refunded = bundle.trail.find((e) => e.event === 'escrow.refunded')!;
    const v = (refunded.body as { void: { signer: string; signedAt: string; signature: string } }).void;
    assert.equal(v.signer, bundle.proof.payee);
    assert.deepEqual(bundle.parties!.signatures[1].signedBody, { escrowId: bundle.proof.escrowId, action: 'void', signedAt: v.signedAt });
    assert.equal(
      (bundle.parties!.signatures[0].signedBody as { termsHash: string }).termsHash,
      bundle.proof.termsHash,
      'the payer signed the terms the proof names',
    );
    assert.equal(auth.publicKey, bundle.proof.payer);
    const missing = verifyBundle({ ...bundle, parties: { signatures: [] } }, { trustedKeys: pinned }).checks.find(
      (c) => c.name === 'parties.complete',
    )!;
    assert.match(missing.detail, /escrow\.created\) records an x402 collect but the payer's x402 authorization is not carried/);

    const e = await h().req('POST', '/v1/escrows', {
      amount: '1',
      asset: 'USDC',
      terms: TERMS,
      payer: { publicKey: generateKeys().publicKey },
      payee: { publicKey: generateKeys().publicKey },
    });
    await h().req('POST', `/v1/escrows/${e.body.id}/fund`);
    const refund = await h().req('POST', `/v1/escrows/${e.body.id}/refund`);
    const rest = await bundleOf(h(), refund.body.id);
    assert.deepEqual(rest.bundle.parties!.signatures, []);
    assert.equal('x402' in (rest.bundle.trail[0].body as object), false);
    assert.equal(verifyBundle(rest.bundle, { trustedKeys: rest.pinned }).ok, true);
  });

  test('a consent re-signed by the right party over another body no longer belongs to the matter', async () => {
    const p = await collected(h());
    const r = await p.settle(signVoid(p.payee.secretKey, { escrowId: p.escrowId }));
    const { bundle, pinned } = await bundleOf(h(), r.body.transaction);
    const rows: Array<[number, string, (b: any) => void, RegExp]> = [
      [0, p.payer.secretKey, (b) => (b.value = '20000'), /authorization\.value is not the proof's amount 0\.01 \(in atomic units/],
      [0, p.payer.secretKey, (b) => (b.termsHash = 'e'.repeat(64)), /authorization\.termsHash is not the proof's termsHash/],
      [0, p.payer.secretKey, (b) => (b.nonce = 'e'.repeat(64)), /is not the x402\.authorizationHash escrow\.created records/],
      [1, p.payee.secretKey, (b) => (b.signedAt = '2030-01-01T00:00:00.000Z'), /signer and signature are not the void the trail records/],
      [1, p.payee.secretKey, (b) => (b.action = 'capture'), /signed body is not \{escrowId: esc_\w+, action: "void", signedAt\}/],
    ];
    for (const [i, secretKey, change, detail] of rows) {
      const b = structuredClone(bundle);
      const s = b.parties!.signatures[i];
      change(s.signedBody);
      s.signature = signBody(secretKey, s.signedBody).signature;
      const bad = verifyBundle(b, { trustedKeys: pinned }).checks.filter((c) => !c.ok);
      assert.equal(bad[0]?.name, `parties[${i}].${s.kind}`, detail.source);
      assert.match(bad[0].detail, detail);
    }
  });
});
