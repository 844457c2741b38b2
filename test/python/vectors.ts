// Shared vectors for the Python package (python/tests/vectors/): bundles the service issues in process
// (released, refunded, split, disputed, facilitator, mandate, AP2, witnessed with Ed25519 and ML-DSA-44
// witnesses) and broken variants of them, each with what this repository's verifyBundle says of it;
// client-signed bodies and webhook deliveries with what the TypeScript side computes; the tables the
// Python package copies (ISO 4217 minor units, party signature kinds). The Python tests
// must agree; test/python/vectors.test.ts checks that the committed files are still what this script
// makes. Run: npx tsx test/python/vectors.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeHarness, type Harness } from '../harness.ts';
import { agent, PASSING_TERMS } from '../fixtures.ts';
import { chain, closedMandate, jwks, openMandate, p256Key } from '../ap2Mint.ts';
import { createTestWitness, witnessFetch } from '../witness/witness.ts';
import { submitOnce } from '../../src/witness/submitter.ts';
import { ap2Issuers } from '@escrow-settlement/protocol/ap2/chain';
import { verifyBundle, type VerifyOptions } from '@escrow-settlement/protocol/verify';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import {
  contentHash,
  createPaymentHeader,
  generateKeys,
  signDelivery,
  signDisputeAction,
  signMandate,
  signRefund,
  signRuling,
} from '@escrow-settlement/client';
import { signCapture, signCollect, signRefund as signFacilitatorRefund, signVoid } from '@escrow-settlement/client/x402/authCapture';
import { signBody } from '@escrow-settlement/protocol/keys';
import { verifyWebhook } from '@escrow-settlement/protocol/webhook';
import { deliveryHeaders } from '../../src/webhooks/event.ts';
import { signerFor } from '../../src/webhooks/signer.ts';
import { publicKeyOf } from '@escrow-settlement/protocol/crypto/ed25519';
import { toHex, toBase64 } from '@escrow-settlement/protocol/crypto/bytes';
import { PARTY_SIGNATURE_KINDS, type Bundle } from '@escrow-settlement/protocol/types';
import { ISO_4217_MINOR_UNITS, NO_MINOR_UNIT } from '@escrow-settlement/protocol/ap2/iso4217';
import { ml_dsa44 } from '@noble/post-quantum/ml-dsa.js';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'python', 'tests', 'vectors');

/** Options as both verifiers take them, in the TypeScript spelling (the Python test maps the names). */
interface Options {
  trustedKeys?: string[];
  trustBundleKeys?: boolean;
  witnesses?: string[];
  quorum?: number;
  ap2Issuers?: unknown;
}

export interface BundleVector {
  name: string;
  bundle: unknown;
  options: Options;
  expected: { valid: boolean; failed: string[]; checks: Array<[string, boolean]> };
}

const clone = (v: unknown): any => JSON.parse(JSON.stringify(v));
const flip = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);

function expect(bundle: unknown, options: Options): BundleVector['expected'] {
  const r = verifyBundle(bundle as Bundle, options as VerifyOptions);
  return { valid: r.ok, failed: r.checks.filter((c) => !c.ok).map((c) => c.name), checks: r.checks.map((c) => [c.name, c.ok]) };
}

async function ok(h: Harness, method: string, path: string, body?: unknown) {
  const r = await h.req(method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.body;
}

const now = async (h: Harness) => (await ok(h, 'GET', '/v1/sandbox/clock')).now as string;

/** Every bundle vector: made by a service in process, then broken in the ways an auditor must notice. */
export async function bundleVectors(): Promise<BundleVector[]> {
  const out: BundleVector[] = [];
  const add = (name: string, bundle: unknown, options: Options) => out.push({ name, bundle, options, expected: expect(bundle, options) });

  // One sandbox with two witnesses (Ed25519 and ML-DSA-44) and a trusted AP2 issuer: every bundle below
  // carries a checkpoint both witnesses cosigned.
  const w1 = createTestWitness('ed.witness.test');
  const w2 = createTestWitness('pq.witness.test', [], 'mldsa44');
  const stranger = createTestWitness('stranger.witness.test');
  const ISSUER = p256Key('issuer-1');
  const OTHER = p256Key('issuer-1');
  const h = await makeHarness(
    'pglite',
    {
      WITNESSES: `${w1.vkey}=http://w1.test,${w2.vkey}=http://w2.test`,
      AP2_PISP: JSON.stringify({ legal_name: 'Escrow Settlement Ltd', brand_name: 'Escrow', domain_name: 'escrow.example' }),
      AP2_AUDIENCE: 'https://escrow.example',
    },
    undefined,
    { ap2Issuers: ap2Issuers(jwks(ISSUER)) },
  );
  const witnessed = () => submitOnce(h.app.svc, { log: () => {}, fetch: witnessFetch({ 'http://w1.test/': w1, 'http://w2.test/': w2 }) });
  const bundleOf = async (proofId: string, disclose = true) => {
    await witnessed();
    return ok(h, 'GET', `/v1/proofs/${proofId}/bundle${disclose ? '?disclose=payload' : ''}`);
  };
  try {
    const doc = await ok(h, 'GET', '/.well-known/proof-issuer.json');
    const issuer = doc.keys.map((k: { publicKey: string }) => k.publicKey);
    for (const x of [w1, w2]) x.trust(doc.keys.at(-1).vkey);
    const pin = { trustedKeys: issuer };
    const payer = await agent(h, 'payer');
    const payee = await agent(h, 'payee');
    const party = { payerAgentId: payer.id, payeeAgentId: payee.id };
    const terms = {
      description: 'every kind of check',
      checks: [
        { kind: 'shape', requiredFields: ['title', '/items/0'] },
        { kind: 'maxBytes', limit: 4096 },
        { kind: 'deadline', by: '2999-01-01T00:00:00+01:00' },
        { kind: 'predicate', name: 'non-empty' },
        { kind: 'predicate', name: 'equals', params: { pointer: '/status', value: { ok: true, n: 1.5 } } },
        { kind: 'predicate', name: 'number-range', params: { pointer: '/score', min: 0.25, max: 1e15 } },
        { kind: 'predicate', name: 'length-range', params: { pointer: '/title', min: 1, max: 40 } },
      ],
    };
    const payload = {
      title: 'Bericht – Ünïcode 😀',
      items: [1, 2.5, -0.000001],
      status: { n: 1.5, ok: true },
      score: 1234567.125,
      big: 123456789.5,
      tiny: 5e-7,
    };

    // Released, through a client-signed delivery (the payee's key held by the client).
    const payeeKey = generateKeys();
    const e1 = await ok(h, 'POST', '/v1/escrows', {
      amount: '12.5',
      asset: 'USDC',
      terms,
      payerAgentId: payer.id,
      payee: { publicKey: payeeKey.publicKey, label: 'client-held' },
    });
    await ok(h, 'POST', `/v1/escrows/${e1.id}/fund`);
    const d1 = await ok(
      h,
      'POST',
      `/v1/escrows/${e1.id}/delivery`,
      signDelivery(payeeKey.secretKey, { escrowId: e1.id, payload, submittedAt: await now(h) }),
    );
    const released = await bundleOf(d1.proof.id);
    add('released', released, pin);
    add('released-undisclosed', await bundleOf(d1.proof.id, false), pin);
    add('released-trust-bundle-keys', released, { trustBundleKeys: true });
    add('released-no-pinned-key', released, {});
    add('released-wrong-pinned-key', released, { trustedKeys: [generateKeys().publicKey] });
    const broken = (name: string, f: (b: any) => void, options: Options = pin) => {
      const b = clone(released);
      f(b);
      add(name, b, options);
    };
    broken('tampered-proof-signature', (b) => (b.proof.signature.signature = flip(b.proof.signature.signature)));
    broken('altered-proof-amount', (b) => (b.proof.amount = '1250'));
    broken('wrong-inclusion-path', (b) =>
      b.inclusion.auditPath.length
        ? (b.inclusion.auditPath[0] = flip(b.inclusion.auditPath[0]))
        : (b.inclusion.auditPath = ['0'.repeat(64)]),
    );
    broken('wrong-leaf-index', (b) => (b.inclusion.leafIndex += 1));
    broken('wrong-leaf-hash', (b) => (b.inclusion.leafHash = flip(b.inclusion.leafHash)));
    broken('altered-terms', (b) => (b.terms.checks[1].limit = 4095));
    broken('altered-disclosed-payload', (b) => (b.disclosed.payload.title = 'Bericht'));
    broken('altered-submitted-at', (b) => (b.disclosed.submittedAt = '2026-01-01T00:00:00.000Z'));
    broken('altered-trail-entry', (b) => (b.trail[1].at = '2026-01-01T00:00:00.000Z'));
    broken('truncated-trail', (b) => b.trail.pop());
    broken('tampered-head-signature', (b) => (b.inclusion.head.signature.signature = flip(b.inclusion.head.signature.signature)));
    broken('head-of-another-size', (b) => (b.inclusion.head.logSize += 1));
    broken('head-key-id-mismatch', (b) => (b.inclusion.head.keyId = 'iss_0000000000000000'));
    broken('tampered-delivery-signature', (b) => (b.parties.signatures[0].signature = flip(b.parties.signatures[0].signature)));
    broken('delivery-signature-missing', (b) => (b.parties.signatures = []));
    broken('delivery-signature-wrong-entry', (b) => (b.parties.signatures[0].trailIndex = 0));
    broken('issuer-key-missing', (b) => (b.issuerKeys = []));
    broken('no-terms', (b) => delete b.terms);
    broken('bundle-format-no-trail', (b) => delete b.trail);
    broken('bundle-format-bad-hex', (b) => (b.proof.trailHead = b.proof.trailHead.toUpperCase()));
    broken('float-trail-length', (b) => (b.proof.trailLength = b.proof.trailLength + 0.5));

    // Failing verdict, then refunded; and funded then refunded.
    const failing = {
      description: 'a title',
      checks: [
        { kind: 'shape', requiredFields: ['title'] },
        { kind: 'hash', expected: 'f'.repeat(64) },
      ],
    };
    const e2 = await ok(h, 'POST', '/v1/escrows', { amount: '3', asset: 'USDC', terms: failing, ...party });
    await ok(h, 'POST', `/v1/escrows/${e2.id}/fund`);
    await ok(h, 'POST', `/v1/escrows/${e2.id}/delivery`, { agentId: payee.id, payload: { body: 'no title' } });
    const p2 = await ok(h, 'POST', `/v1/escrows/${e2.id}/refund`);
    const refunded = await bundleOf(p2.id ?? p2.proof?.id);
    add('refunded-after-failed-verdict', refunded, pin);
    add('refunded-after-failed-verdict-undisclosed', await bundleOf(p2.id ?? p2.proof?.id, false), pin);
    const rb = clone(refunded);
    rb.trail[rb.trail.findIndex((e: any) => e.event === 'verdict.failed')].body.failed = ['shape'];
    add('refunded-verdict-rewritten', rb, pin);
    const e3 = await ok(h, 'POST', '/v1/escrows', { amount: '0.000001', asset: 'USDC', terms: PASSING_TERMS, ...party });
    await ok(h, 'POST', `/v1/escrows/${e3.id}/fund`);
    const p3 = await ok(h, 'POST', `/v1/escrows/${e3.id}/refund`);
    add('refunded-without-delivery', await bundleOf(p3.id ?? p3.proof?.id), pin);

    // Split by both parties, client-signed dispute acts and ruling.
    const payerKey = generateKeys();
    const payee2 = generateKeys();
    const e4 = await ok(h, 'POST', '/v1/escrows', {
      amount: '10',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payer: { publicKey: payerKey.publicKey },
      payee: { publicKey: payee2.publicKey },
    });
    await ok(h, 'POST', `/v1/escrows/${e4.id}/fund`);
    await ok(
      h,
      'POST',
      `/v1/escrows/${e4.id}/delivery`,
      signDelivery(payee2.secretKey, { escrowId: e4.id, payload: { nope: 1 }, submittedAt: await now(h) }),
    );
    const dsp = await ok(
      h,
      'POST',
      `/v1/escrows/${e4.id}/dispute`,
      signDisputeAction(payerKey.secretKey, { escrowId: e4.id, action: 'dispute.open', reason: 'no title', signedAt: await now(h) }),
    );
    await ok(
      h,
      'POST',
      `/v1/escrows/${e4.id}/dispute/evidence`,
      signDisputeAction(payee2.secretKey, {
        escrowId: e4.id,
        action: 'dispute.evidence',
        note: 'it was late',
        payload: { log: [1, 2] },
        signedAt: await now(h),
      }),
    );
    await ok(
      h,
      'POST',
      `/v1/escrows/${e4.id}/dispute/evidence`,
      signDisputeAction(payerKey.secretKey, { escrowId: e4.id, action: 'dispute.evidence', note: 'a note only', signedAt: await now(h) }),
    );
    const ruling = {
      escrowId: e4.id,
      disputeId: dsp.id,
      outcome: 'split' as const,
      rationale: 'both partly right',
      shares: { payerBps: 3333, payeeBps: 6667 },
    };
    const res4 = await ok(h, 'POST', `/v1/escrows/${e4.id}/dispute/resolve`, {
      outcome: 'split',
      rationale: ruling.rationale,
      shares: ruling.shares,
      signatures: [signRuling(payerKey.secretKey, ruling), signRuling(payee2.secretKey, ruling)],
    });
    const split = await bundleOf(res4.proof.id);
    add('split-co-signed', split, pin);
    const sb = clone(split);
    sb.parties.signatures = sb.parties.signatures.filter((s: any) => !(s.kind === 'ruling' && s.publicKey === payee2.publicKey));
    add('split-ruling-signature-missing', sb, pin);
    const sb2 = clone(split);
    const ev = sb2.parties.signatures.find((s: any) => s.kind === 'dispute.evidence');
    ev.signedBody.note = 'edited';
    add('split-evidence-edited', sb2, pin);
    const sb3 = clone(split);
    const op = sb3.parties.signatures.find((s: any) => s.kind === 'dispute.open');
    op.publicKey = payee2.publicKey;
    add('split-opener-swapped', sb3, pin);

    // Released by the arbiter (sandbox-held keys).
    const arbiter = await agent(h, 'arbiter');
    const e5 = await ok(h, 'POST', '/v1/escrows', {
      amount: '7',
      asset: 'USDC',
      terms: PASSING_TERMS,
      ...party,
      arbiterAgentId: arbiter.id,
    });
    await ok(h, 'POST', `/v1/escrows/${e5.id}/fund`);
    await ok(h, 'POST', `/v1/escrows/${e5.id}/delivery`, { agentId: payee.id, payload: [] });
    await ok(h, 'POST', `/v1/escrows/${e5.id}/dispute`, { agentId: payee.id, reason: 'the terms were wrong' });
    const res5 = await ok(h, 'POST', `/v1/escrows/${e5.id}/dispute/resolve`, { outcome: 'release', agentIds: [arbiter.id] });
    add('released-by-arbiter', await bundleOf(res5.proof.id), pin);

    // Under a mandate.
    const principal = generateKeys();
    const payerHeld = generateKeys();
    const caps = {
      agent: payerHeld.publicKey,
      perEscrowMax: '100',
      cumulativeMax: '1000',
      allowedAssets: ['USDC'],
      expiresAt: '2999-01-01T00:00:00.000Z',
    };
    const mandate = await ok(h, 'POST', '/v1/mandates', signMandate(principal.secretKey, caps));
    const e6 = await ok(h, 'POST', '/v1/escrows', {
      amount: '5',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payer: { publicKey: payerHeld.publicKey },
      payeeAgentId: payee.id,
      mandateId: mandate.id,
    });
    await ok(h, 'POST', `/v1/escrows/${e6.id}/fund`);
    const d6 = await ok(h, 'POST', `/v1/escrows/${e6.id}/delivery`, { agentId: payee.id, payload: { title: 'under a mandate' } });
    const mandated = await bundleOf(d6.proof.id);
    add('released-under-mandate', mandated, pin);
    const mb = clone(mandated);
    mb.parties.signatures = mb.parties.signatures.filter((s: any) => s.kind !== 'mandate');
    add('mandate-signature-missing', mb, pin);

    // The x402 facilitator: collect and capture; collect and void.
    const fPayer = generateKeys();
    const fPayee = generateKeys();
    const requirements = {
      scheme: 'auth-capture',
      network: 'escrow:sandbox',
      asset: 'USDC',
      amount: '250000',
      payTo: fPayee.publicKey,
      maxTimeoutSeconds: 60,
      extra: { paymentFlow: 'escrow', terms: PASSING_TERMS },
    };
    const collect = (nonce?: string) => {
      const payload = signCollect(fPayer.secretKey, {
        to: fPayee.publicKey,
        value: '250000',
        asset: 'USDC',
        resource: 'https://shop.example/report',
        terms: PASSING_TERMS,
        maxTimeoutSeconds: 60,
        nonce,
      });
      return {
        x402Version: 2,
        paymentPayload: { x402Version: 2, resource: { url: 'https://shop.example/report' }, accepted: requirements, payload },
        paymentRequirements: requirements,
      };
    };
    const settle = (body: any, payload: unknown) =>
      ok(h, 'POST', '/v1/x402/facilitator/settle', { ...body, paymentPayload: { ...body.paymentPayload, payload } });
    const c1 = collect();
    const col1 = await ok(h, 'POST', '/v1/x402/facilitator/settle', c1);
    const cap = await settle(
      c1,
      signCapture(fPayee.secretKey, { escrowId: col1.transaction, payload: { title: 'the report' }, submittedAt: await now(h) }),
    );
    const facilitated = await bundleOf(cap.transaction);
    add('facilitator-captured', facilitated, pin);
    const fb = clone(facilitated);
    fb.parties.signatures = fb.parties.signatures.filter((s: any) => s.kind !== 'x402');
    add('facilitator-authorization-missing', fb, pin);
    const fb2 = clone(facilitated);
    fb2.parties.signatures.find((s: any) => s.kind === 'x402').signedBody.value = '250001';
    add('facilitator-authorization-altered', fb2, pin);
    // A refund after the capture, through the facilitator: the payee's refund consent rides in the bundle.
    const fr = await settle(
      c1,
      signFacilitatorRefund(fPayee.secretKey, {
        escrowId: col1.transaction,
        amount: '100000',
        reason: 'a page was missing',
        signedAt: await now(h),
      }),
    );
    const fRefunded = await bundleOf(cap.transaction);
    add('facilitator-refunded-after-capture', fRefunded, pin);
    add('facilitator-refund-adjustment-bundle', await bundleOf(fr.transaction), pin);
    const frb = clone(fRefunded);
    frb.parties.signatures.find((s: any) => s.kind === 'refund').signedBody.amount = '0.2';
    add('facilitator-refund-consent-altered', frb, pin);
    const c2 = collect();
    const col2 = await ok(h, 'POST', '/v1/x402/facilitator/settle', c2);
    const vd = await settle(c2, signVoid(fPayee.secretKey, { escrowId: col2.transaction, signedAt: await now(h) }));
    const voided = await bundleOf(vd.transaction);
    add('facilitator-voided', voided, pin);
    const vb = clone(voided);
    vb.parties.signatures = vb.parties.signatures.filter((s: any) => s.kind !== 'x402.void');
    add('facilitator-void-missing', vb, pin);

    // The x402 demo (v1): the payer's decimal authorization is the matter's consent.
    {
      const offer = (await h.req('GET', '/v1/x402/demo')).body.accepts[0];
      const header = createPaymentHeader(offer, generateKeys().secretKey);
      const paid = await h.req('GET', '/v1/x402/demo', undefined, { 'X-PAYMENT': header });
      const answer = JSON.parse(Buffer.from(paid.headers.get('x-payment-response')!, 'base64').toString());
      const demo = await bundleOf(answer.proofId);
      add('x402-demo-paid', demo, pin);
      const d2 = clone(demo);
      d2.parties.signatures.find((x: any) => x.kind === 'x402').signedBody.value = '0.02';
      add('x402-demo-authorization-altered', d2, pin);
    }

    // ---- money after the verdict: a fee, a partial capture under a metered price, refunds after release ----
    {
      const moneyPayee = generateKeys();
      const arbiter = await agent(h, 'arbiter');
      const feeTo = generateKeys().publicKey;
      const metered = {
        description: 'a metered report',
        checks: [
          { kind: 'shape', requiredFields: ['title'] },
          { kind: 'price', perUnit: '0.5', units: '/units', max: '15' },
        ],
      };
      const e = await ok(h, 'POST', '/v1/escrows', {
        amount: '20',
        asset: 'USDC',
        terms: metered,
        payerAgentId: payer.id,
        payee: { publicKey: moneyPayee.publicKey },
        arbiterAgentId: arbiter.id,
        fee: { bps: 250, recipient: feeTo },
      });
      await ok(h, 'POST', `/v1/escrows/${e.id}/fund`);
      const submittedAt = await now(h);
      const signed = signBody(moneyPayee.secretKey, {
        escrowId: e.id,
        contentHash: contentHash({ title: 'metered', units: 30.5 }),
        submittedAt,
        amount: '12.5',
      });
      const d = await ok(h, 'POST', `/v1/escrows/${e.id}/delivery`, {
        payload: { title: 'metered', units: 30.5 },
        submittedAt,
        signature: signed,
        amount: '12.5',
      });
      const closingId = d.proof.id;
      const captured = await bundleOf(closingId);
      add('released-fee-partial-capture', captured, pin);
      const c1 = clone(captured);
      c1.proof.payouts.fee = '0';
      add('payouts-altered', c1, pin);
      const c2 = clone(captured);
      c2.parties.signatures.find((x: any) => x.kind === 'delivery').signedBody.amount = '20';
      add('delivery-claimed-amount-altered', c2, pin);
      const c3 = clone(captured);
      c3.disclosed.payload.units = 20;
      add('metered-units-altered', c3, pin);
      const c4 = clone(captured);
      c4.terms.checks[1].perUnit = '0.25';
      add('metered-price-altered', c4, pin);

      // Metered prices judged exactly: a claim over perUnit × units fails (then refunded), one exactly at it passes.
      const priced = (perUnit: string) => ({ description: 'metered', checks: [{ kind: 'price', perUnit, units: '/n' }] });
      const over = await ok(h, 'POST', '/v1/escrows', { amount: '15', asset: 'USDC', terms: priced('0.5'), ...party });
      await ok(h, 'POST', `/v1/escrows/${over.id}/fund`);
      await ok(h, 'POST', `/v1/escrows/${over.id}/delivery`, { agentId: payee.id, payload: { n: 10 }, amount: '5.000001' });
      const overRefund = await ok(h, 'POST', `/v1/escrows/${over.id}/refund`);
      add('metered-price-over-refunded', await bundleOf(overRefund.id ?? overRefund.proof?.id), pin);
      const exact = await ok(h, 'POST', '/v1/escrows', { amount: '1', asset: 'USDC', terms: priced('0.3'), ...party });
      await ok(h, 'POST', `/v1/escrows/${exact.id}/fund`);
      const ex = await ok(h, 'POST', `/v1/escrows/${exact.id}/delivery`, { agentId: payee.id, payload: { n: 0.1 }, amount: '0.03' });
      add('metered-price-exact', await bundleOf(ex.proof.id), pin);

      // A refund by the payee (client-signed), a refund request by the payer, a refund by the arbiter.
      const refundBody = { escrowId: e.id, action: 'refund', amount: '2.5', reason: 'two pages were missing', signedAt: await now(h) };
      await ok(h, 'POST', `/v1/escrows/${e.id}/refunds`, {
        amount: '2.5',
        reason: 'two pages were missing',
        signedAt: refundBody.signedAt,
        signature: signBody(moneyPayee.secretKey, refundBody),
      });
      await ok(h, 'POST', `/v1/escrows/${e.id}/refund-requests`, { amount: '1', reason: 'one more page', agentIds: [payer.id] });
      const second = await ok(h, 'POST', `/v1/escrows/${e.id}/refunds`, { amount: '1', agentIds: [arbiter.id] });
      const adjusted = await bundleOf(closingId);
      add('refunded-after-release', adjusted, pin);
      add('refunded-after-release-trust-bundle-keys', adjusted, { trustBundleKeys: true });
      add('adjustment-bundle', await bundleOf(second.proof.id), pin);
      const broken = (name: string, f: (b: any) => void) => {
        const b = clone(adjusted);
        f(b);
        add(name, b, pin);
      };
      broken('adjustment-amount-altered', (b) => (b.adjustments[0].proof.amount = '3'));
      broken(
        'adjustment-signature-tampered',
        (b) => (b.adjustments[1].proof.signature.signature = flip(b.adjustments[1].proof.signature.signature)),
      );
      broken('adjustment-inclusion-wrong', (b) => (b.adjustments[0].inclusion.leafIndex += 1));
      broken('adjustment-missing', (b) => b.adjustments.pop());
      broken('adjustments-all-missing', (b) => delete b.adjustments);
      broken('adjustment-trail-cut', (b) => (b.trail = b.trail.slice(0, b.proof.trailLength + 1)));
      broken('refund-signature-missing', (b) => (b.parties.signatures = b.parties.signatures.filter((x: any) => x.kind !== 'refund')));
      broken('refund-request-signature-tampered', (b) => {
        const r = b.parties.signatures.find((x: any) => x.kind === 'refund.request');
        r.signature = flip(r.signature);
      });
      broken('refund-signed-by-payer', (b) => {
        const r = b.parties.signatures.find((x: any) => x.kind === 'refund.request');
        r.kind = 'refund';
      });
    }

    // ---- AP2 ----
    // One escrow under a Payment Mandate chain: its closed mandate pays `minor` minor units of `currency`,
    // which must be the escrow's `amount` (docs/ap2.md §3).
    const ap2Escrow = async (currency: string, minor: number, amount: string) => {
      const clock = Math.floor(Date.parse(await now(h)) / 1000);
      const agentKey = p256Key();
      const open = openMandate({
        issuer: ISSUER,
        agent: agentKey,
        constraints: [{ type: 'payment.amount_range', currency, max: 50_000, min: 1 }],
        iat: clock - 10,
        exp: clock + 400 * 86_400,
      });
      const c = await ok(h, 'POST', '/v1/ap2/challenge');
      const closed = closedMandate({
        agent: agentKey,
        open,
        aud: c.audience,
        nonce: c.nonce,
        payeeId: payee.publicKey,
        amount: minor,
        currency,
        iat: clock,
      });
      const e = await ok(h, 'POST', '/v1/escrows', {
        amount,
        asset: currency,
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
        ap2: { paymentMandate: chain(open, closed) },
      });
      await ok(h, 'POST', `/v1/escrows/${e.id}/fund`);
      const d = await ok(h, 'POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 'AP2' } });
      return bundleOf(d.proof.id);
    };
    {
      const b = await ap2Escrow('USD', 19_950, '199.5');
      add('ap2-released', b, { trustedKeys: issuer, ap2Issuers: jwks(ISSUER) });
      add('ap2-without-ap2-issuers', b, { trustedKeys: issuer });
      add('ap2-other-issuer-key', b, { trustedKeys: issuer, ap2Issuers: jwks(OTHER) });
      const t = clone(b);
      const s = t.parties.signatures.find((x: any) => x.kind === 'ap2');
      s.signedBody.paymentMandate = s.signedBody.paymentMandate.replace(
        /\.([A-Za-z0-9_-]+)~/,
        (_m: string, sig: string) => `.${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BA' : 'AA'}~`,
      );
      add('ap2-chain-tampered', t, { trustedKeys: issuer, ap2Issuers: jwks(ISSUER) });
    }

    {
      // HUF has 2 fraction digits in ISO 4217 (the service's table) but 0 in CLDR, which `Intl` reports:
      // 19950 minor units are 199.50 HUF, and a verifier reading locale data would find 199.5 no whole
      // number of forints.
      const b = await ap2Escrow('HUF', 19_950, '199.5');
      add('ap2-huf-released', b, { trustedKeys: issuer, ap2Issuers: jwks(ISSUER) });
    }

    // ---- witnessed ----
    {
      const e = await ok(h, 'POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      });
      await ok(h, 'POST', `/v1/escrows/${e.id}/fund`);
      const d = await ok(h, 'POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 'witnessed' } });
      const b = await bundleOf(d.proof.id);
      const both = { trustedKeys: issuer, witnesses: [w1.vkey, w2.vkey] };
      add('witnessed-ed25519-and-mldsa44', b, both);
      add('witnessed-mldsa44-only', b, { trustedKeys: issuer, witnesses: [w2.vkey] });
      add('witnessed-quorum-2-of-3', b, { trustedKeys: issuer, witnesses: [w1.vkey, w2.vkey, stranger.vkey], quorum: 2 });
      add('witnessed-quorum-3-of-3', b, { trustedKeys: issuer, witnesses: [w1.vkey, w2.vkey, stranger.vkey] });
      add('witnessed-not-required', b, { trustedKeys: issuer });
      add(
        'unwitnessed-but-required',
        (() => {
          const x = clone(b);
          delete x.logProof;
          return x;
        })(),
        both,
      );
      const cosig = (name: string, f: (lines: string[]) => void) => {
        const x = clone(b);
        const lines = x.logProof.split('\n');
        f(lines);
        x.logProof = lines.join('\n');
        add(name, x, both);
      };
      const tamperLine = (prefix: string) => (lines: string[]) => {
        const i = lines.findIndex((l) => l.startsWith(`\u2014 ${prefix}`));
        const [dash, name, blob] = lines[i].split(' ');
        const bytes = Buffer.from(blob, 'base64');
        bytes[bytes.length - 1] ^= 1;
        lines[i] = `${dash} ${name} ${bytes.toString('base64')}`;
      };
      cosig('witnessed-ed25519-cosignature-tampered', tamperLine('ed.witness.test'));
      cosig('witnessed-mldsa44-cosignature-tampered', tamperLine('pq.witness.test'));
      cosig('witnessed-checkpoint-signature-tampered', (lines) => {
        const origin = lines[lines.indexOf('') + 1];
        tamperLine(origin)(lines);
      });
      cosig('witnessed-logproof-index-wrong', (lines) => (lines[1] = `index ${Number(lines[1].slice(6)) + 1}`));
      cosig('witnessed-logproof-malformed', (lines) => (lines[0] = 'c2sp.org/tlog-proof@v0'));
    }
    // Last, as it moves the sandbox clock. The payer binds an absolute refundDeadline; the capture comes 50 s after the collect, so the
    // refund window ends at the bound deadline, not at the capture + the window counted at collect.
    {
      const start = Date.parse(await now(h));
      const bound = { captureDeadline: new Date(start + 60_000).toISOString(), refundDeadline: new Date(start + 120_000).toISOString() };
      const req = { ...requirements, extra: { ...requirements.extra, ...bound } };
      const payload = signCollect(fPayer.secretKey, {
        to: fPayee.publicKey,
        value: '250000',
        asset: 'USDC',
        resource: 'https://shop.example/report',
        terms: PASSING_TERMS,
        maxTimeoutSeconds: 60,
        bound,
      });
      const c3 = {
        x402Version: 2,
        paymentPayload: { x402Version: 2, resource: { url: 'https://shop.example/report' }, accepted: req, payload },
        paymentRequirements: req,
      };
      const col3 = await ok(h, 'POST', '/v1/x402/facilitator/settle', c3);
      await ok(h, 'POST', '/v1/sandbox/clock', { advanceSeconds: 50 });
      const cap3 = await settle(
        c3,
        signCapture(fPayee.secretKey, { escrowId: col3.transaction, payload: { title: 'the report' }, submittedAt: await now(h) }),
      );
      await settle(c3, signFacilitatorRefund(fPayee.secretKey, { escrowId: col3.transaction, amount: '1000', signedAt: await now(h) }));
      const deadlined = await bundleOf(cap3.transaction);
      add('facilitator-refund-deadline-bound', deadlined, pin);
      const db = clone(deadlined);
      delete db.parties.signatures.find((s: any) => s.kind === 'x402').signedBody.refundDeadline;
      add('facilitator-refund-deadline-unbound', db, pin);
    }
  } finally {
    await h.close();
  }
  return out;
}

/** Client-signed bodies from a fixed seed and fixed times: the Python client must produce the same bytes. */
export function signedVectors() {
  const secret = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
  const at = '2026-11-21T10:00:00.000Z';
  const escrowId = 'esc_01jd00000000000000000000aa';
  return {
    secret,
    publicKey: generateKeysFrom(secret),
    delivery: signDelivery(secret, { escrowId, payload: { title: 'Ünïcode 😀', n: [1, 2.5, 1e21, 1e-7] }, submittedAt: at }),
    disputeOpen: signDisputeAction(secret, { escrowId, action: 'dispute.open', reason: 'late', signedAt: at }),
    disputeOpenNoReason: signDisputeAction(secret, { escrowId, action: 'dispute.open', signedAt: at }),
    evidence: signDisputeAction(secret, { escrowId, action: 'dispute.evidence', note: 'see log', payload: { log: ['a'] }, signedAt: at }),
    ruling: signRuling(secret, {
      escrowId,
      disputeId: 'dsp_01jd00000000000000000000aa',
      outcome: 'split',
      rationale: 'half',
      shares: { payerBps: 5000, payeeBps: 5000 },
    }),
    rulingRelease: signRuling(secret, { escrowId, disputeId: 'dsp_01jd00000000000000000000aa', outcome: 'release' }),
    mandate: signMandate(secret, {
      agent: 'a'.repeat(64),
      perEscrowMax: '10',
      cumulativeMax: '100',
      allowedAssets: ['USDC'],
      expiresAt: at,
    }),
    capture: signCapture(secret, { escrowId, payload: { title: 't' }, submittedAt: at }),
    void: signVoid(secret, { escrowId, signedAt: at }),
    collect: signCollect(secret, {
      to: 'b'.repeat(64),
      value: '250000',
      asset: 'USDC',
      resource: 'https://shop.example/report',
      terms: PASSING_TERMS,
      maxTimeoutSeconds: 60,
      nonce: 'c'.repeat(64),
      validBefore: at,
    }),
    collectBound: signCollect(secret, {
      to: 'b'.repeat(64),
      value: '250000',
      asset: 'USDC',
      resource: 'https://shop.example/report',
      terms: PASSING_TERMS,
      maxTimeoutSeconds: 60,
      nonce: 'c'.repeat(64),
      validBefore: at,
      bound: {
        minFeeBps: 0,
        maxFeeBps: 250,
        feeRecipient: 'd'.repeat(64),
        captureDeadline: at,
        refundDeadline: '2026-11-28T10:00:00.000Z',
      },
    }),
    capturePartial: signCapture(secret, { escrowId, payload: { title: 't' }, submittedAt: at, amount: '150000', feeBps: 100 }),
    captureFee: signCapture(secret, { escrowId, payload: { title: 't' }, submittedAt: at, feeBps: 0 }),
    facilitatorRefund: signFacilitatorRefund(secret, { escrowId, amount: '2500000', signedAt: at }),
    facilitatorRefundWithReason: signFacilitatorRefund(secret, { escrowId, amount: '1', reason: 'late', signedAt: at }),
    deliveryPartial: signDelivery(secret, { escrowId, payload: { title: 't' }, submittedAt: at, amount: '01.50' }),
    refund: signRefund(secret, { escrowId, amount: '2.50', signedAt: at }),
    refundWithReason: signRefund(secret, { escrowId, amount: '1', reason: 'two pages missing', signedAt: at }),
    refundRequest: signRefund(secret, { escrowId, amount: '0.5', reason: 'late', signedAt: at }, 'refund.request'),
  };
}

function generateKeysFrom(secret: string): string {
  return toHex(publicKeyOf(Buffer.from(secret, 'hex')));
}

/** Webhook deliveries signed as the service signs them, and what verifyWebhook says of each. */
export function webhookVectors() {
  const seed = new Uint8Array(32).fill(7);
  const publicKey = toHex(publicKeyOf(seed));
  const hmacKey = new Uint8Array(32).fill(9);
  const secret = `whsec_${toBase64(hmacKey)}`;
  const body = canonicalize({
    event: 'proof.issued',
    escrowId: 'esc_01jd00000000000000000000aa',
    at: '2026-11-21T10:00:00.000Z',
    data: { proofId: 'prf_x', outcome: 'released' },
  });
  const timestamp = 1795255200;
  const sign = signerFor(seed);
  const headers = deliveryHeaders({
    body,
    id: 'esc_01jd00000000000000000000aa_5',
    timestamp,
    proofSignature: toHex(sign(new TextEncoder().encode(body))),
    publicKey,
    sign,
    hmacKey,
    userAgent: 'escrow-settlement-webhooks',
    destination: 'https://receiver.example/hook',
  });
  const now = timestamp * 1000;
  const cases: Array<{ name: string; body: string; headers: Record<string, string>; pinnedKey: string; options: Record<string, unknown> }> =
    [];
  const add = (name: string, b: string, hs: Record<string, string>, key: string, options: Record<string, unknown> = {}) =>
    cases.push({ name, body: b, headers: hs, pinnedKey: key, options: { now, ...options } });
  const { 'webhook-signature': sig, ...noStd } = headers;
  add('standard-v1a', body, headers, publicKey);
  add('standard-whpk', body, headers, `whpk_${toBase64(publicKeyOf(seed))}`);
  add('standard-with-secret', body, headers, publicKey, { secret });
  add('standard-v1-only-with-secret', body, { ...headers, 'webhook-signature': sig.split(' ')[0] }, generateKeysFrom('2'.repeat(64)), {
    secret,
  });
  add('standard-tampered-body', body.replace('released', 'refunded'), headers, publicKey);
  add('standard-other-key', body, headers, generateKeysFrom('1'.repeat(64)));
  add('standard-too-old', body, headers, publicKey, { now: now + 301_000 });
  add('standard-destination', body, headers, publicKey, { destination: 'https://receiver.example/hook' });
  add('standard-other-destination', body, headers, publicKey, { destination: 'https://other.example/hook' });
  add('x-proof', body, noStd, publicKey);
  add('x-proof-tampered', `${body} `, noStd, publicKey);
  add('no-signature', body, { 'content-type': 'application/json' }, publicKey);
  return cases.map((c) => {
    const r = verifyWebhook(c.body, c.headers, c.pinnedKey, c.options as never);
    return { ...c, expected: { ok: r.ok, style: r.style ?? null } };
  });
}

/** ML-DSA-44 signatures by @noble/post-quantum (the library the service verifies with), valid and broken. */
export function mldsaVectors() {
  const out: Array<{ name: string; publicKey: string; message: string; signature: string; valid: boolean }> = [];
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
  for (let i = 0; i < 3; i++) {
    const k = ml_dsa44.keygen(new Uint8Array(32).fill(i + 1));
    const other = ml_dsa44.keygen(new Uint8Array(32).fill(i + 101));
    const msg = new TextEncoder().encode(`subtree/v1 message ${i} ${'x'.repeat(i * 100)}`);
    const sig = ml_dsa44.sign(msg, k.secretKey);
    const add = (name: string, pk: Uint8Array, m: Uint8Array, s: Uint8Array) =>
      out.push({ name: `${name}-${i}`, publicKey: hex(pk), message: hex(m), signature: hex(s), valid: ml_dsa44.verify(s, m, pk) });
    const flipped = (s: Uint8Array, at: number) => {
      const c = s.slice();
      c[at] ^= 1;
      return c;
    };
    add('valid', k.publicKey, msg, sig);
    add('other-message', k.publicKey, new TextEncoder().encode('another message'), sig);
    add('other-key', other.publicKey, msg, sig);
    add('c-tilde-flipped', k.publicKey, msg, flipped(sig, 0));
    add('z-flipped', k.publicKey, msg, flipped(sig, 100 + i));
    add('hint-flipped', k.publicKey, msg, flipped(sig, 2420 - 1 - i));
    add('public-key-flipped', flipped(k.publicKey, 40 + i), msg, sig);
  }
  return out;
}

/**
 * The tables the Python package keeps its own copy of, as the TypeScript side has them: the ISO 4217
 * minor units and the codes with none (docs/ap2.md §3), and the party signature kinds.
 */
export function constantVectors() {
  return {
    iso4217MinorUnits: { ...ISO_4217_MINOR_UNITS },
    noMinorUnit: [...NO_MINOR_UNIT].sort(),
    partySignatureKinds: [...PARTY_SIGNATURE_KINDS],
  };
}

export async function allVectors() {
  return {
    bundles: await bundleVectors(),
    signed: signedVectors(),
    webhooks: webhookVectors(),
    mldsa: mldsaVectors(),
    constants: constantVectors(),
  };
}

async function main() {
  const v = await allVectors();
  mkdirSync(OUT, { recursive: true });
  const files: Record<string, unknown> = {
    'bundles.json': v.bundles,
    'signed.json': v.signed,
    'webhooks.json': v.webhooks,
    'mldsa44.json': v.mldsa,
    'constants.json': v.constants,
  };
  for (const [name, data] of Object.entries(files)) writeFileSync(join(OUT, name), `${JSON.stringify(data, null, 1)}\n`);
  console.log(`wrote ${v.bundles.length} bundle vectors, the signed bodies and ${v.webhooks.length} webhook vectors to ${OUT}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
