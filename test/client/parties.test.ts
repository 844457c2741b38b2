// Bundles carry the parties (docs/protocol.md §11.4): real matters closed through the front door, then checked offline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, type Harness } from '../harness.ts';
import { agent, failedDelivery, PASSING_TERMS } from '../fixtures.ts';
import {
  createPaymentHeader,
  decodePaymentResponse,
  generateKeys,
  signBody,
  signDelivery,
  signDisputeAction,
  signMandate,
  signRuling,
  verifyBundle,
  type Bundle,
  type IssuerKey,
  type PartySignature,
} from '@escrow-settlement/client';
import { outsideKey } from '../tlog/fixtures.ts';

const flipByte = (hex: string) => (parseInt(hex.slice(0, 2), 16) ^ 0x01).toString(16).padStart(2, '0') + hex.slice(2);
const ok = (r: { status: number; text: string }, status = 200) => assert.equal(r.status, status, r.text);

async function bundleOf(h: Harness, proofId: string): Promise<{ bundle: Bundle; pinned: IssuerKey[] }> {
  const b = await h.req('GET', `/v1/proofs/${proofId}/bundle`);
  ok(b);
  return { bundle: b.body, pinned: (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys };
}

/** Mandate, client-signed delivery, dispute opening and evidence, and a co-signed split ruling: every key client-side. */
async function clientSignedMatter(h: Harness) {
  const [principal, payer, payee] = [generateKeys(), generateKeys(), generateKeys()];
  const m = await h.req(
    'POST',
    '/v1/mandates',
    signMandate(principal.secretKey, {
      agent: payer.publicKey,
      perEscrowMax: '100',
      cumulativeMax: '1000',
      allowedAssets: ['USDC'],
      expiresAt: '2099-01-01T00:00:00.000Z',
    }),
  );
  ok(m, 201);
  const e = await h.req('POST', '/v1/escrows', {
    amount: '10',
    asset: 'USDC',
    terms: PASSING_TERMS,
    payer: { publicKey: payer.publicKey },
    payee: { publicKey: payee.publicKey },
    mandateId: m.body.id,
  });
  ok(e, 201);
  const id = e.body.id as string;
  ok(await h.req('POST', `/v1/escrows/${id}/fund`));
  ok(
    await h.req('POST', `/v1/escrows/${id}/delivery`, signDelivery(payee.secretKey, { escrowId: id, payload: { body: 'no title' } })),
    201,
  );
  ok(
    await h.req(
      'POST',
      `/v1/escrows/${id}/dispute`,
      signDisputeAction(payer.secretKey, { escrowId: id, action: 'dispute.open', reason: 'no title' }),
    ),
    201,
  );
  const ev = await h.req(
    'POST',
    `/v1/escrows/${id}/dispute/evidence`,
    signDisputeAction(payee.secretKey, { escrowId: id, action: 'dispute.evidence', note: 'it had one', payload: { title: 'x' } }),
  );
  ok(ev);
  const ruling = {
    escrowId: id,
    disputeId: ev.body.id,
    outcome: 'split' as const,
    rationale: 'halves',
    shares: { payerBps: 5000, payeeBps: 5000 },
  };
  const r = await h.req('POST', `/v1/escrows/${id}/dispute/resolve`, {
    outcome: 'split',
    rationale: 'halves',
    shares: ruling.shares,
    signatures: [signRuling(payer.secretKey, ruling), signRuling(payee.secretKey, ruling)],
  });
  ok(r);
  return {
    proofId: r.body.proof.id as string,
    kinds: ['mandate', 'delivery', 'dispute.open', 'dispute.evidence', 'ruling', 'ruling'],
    keys: { principal, payer, payee },
  };
}

/** Sandbox forms throughout (the service signs with the held keys) and an arbiter's ruling. */
async function sandboxArbiterMatter(h: Harness) {
  const arbiter = await agent(h, 'arbiter');
  const e = await failedDelivery(h, { arbiterAgentId: arbiter.id });
  ok(await h.req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id, reason: 'no title' }), 201);
  ok(await h.req('POST', `/v1/escrows/${e.id}/dispute/evidence`, { agentId: e.payee.id, note: 'it had one' }));
  const r = await h.req('POST', `/v1/escrows/${e.id}/dispute/resolve`, { outcome: 'refund', agentIds: [arbiter.id] });
  ok(r);
  return {
    proofId: r.body.proof.id as string,
    kinds: ['delivery', 'dispute.open', 'dispute.evidence', 'ruling'],
    arbiter: arbiter.publicKey,
  };
}

/** An x402 payment: the payer's authorization and the demo payee's delivery. */
async function x402Matter(h: Harness) {
  const offer = (await h.req('GET', '/v1/x402/demo')).body.accepts[0];
  const payer = generateKeys();
  const r = await h.req('GET', '/v1/x402/demo', undefined, { 'X-PAYMENT': createPaymentHeader(offer, payer.secretKey) });
  ok(r);
  return { proofId: decodePaymentResponse(r.headers.get('x-payment-response')!).proofId, kinds: ['x402', 'delivery'], payer };
}

const MATTERS = [
  ['a client-signed matter with a mandate and a co-signed ruling', clientSignedMatter],
  ['a sandbox matter ruled by its arbiter', sandboxArbiterMatter],
  ['an x402 payment', x402Matter],
] as const;

describeStores('bundles carry the parties', (h) => {
  for (const [what, make] of MATTERS) {
    test(`${what}: the bundle carries each party signature, and flipping one byte of any one fails exactly that one`, async () => {
      const { proofId, kinds } = await make(h());
      const { bundle, pinned } = await bundleOf(h(), proofId);
      const sigs = bundle.parties!.signatures;
      assert.deepEqual(
        sigs.map((s) => s.kind),
        kinds,
      );
      const intact = verifyBundle(bundle, { trustedKeys: pinned });
      assert.equal(intact.ok, true, JSON.stringify(intact.checks.filter((c) => !c.ok)));
      assert.deepEqual(
        intact.checks.filter((c) => c.name.startsWith('parties')).map((c) => c.name),
        [...kinds.map((k, i) => `parties[${i}].${k}`), 'parties.complete'],
      );
      for (let i = 0; i < sigs.length; i++) {
        const b = structuredClone(bundle);
        b.parties!.signatures[i].signature = flipByte(b.parties!.signatures[i].signature);
        const r = verifyBundle(b, { trustedKeys: pinned });
        assert.equal(r.ok, false);
        const bad = r.checks.filter((c) => !c.ok);
        assert.deepEqual(
          bad.map((c) => c.name),
          [`parties[${i}].${kinds[i]}`],
          `flipping signature ${i}`,
        );
        assert.match(bad[0].detail, new RegExp(`^${kinds[i].replace('.', '\\.')} signature (does not verify|could not be checked)`));
      }
    });
  }

  test('dropping any one signature the trail relies on fails parties.complete, naming what is missing', async () => {
    const { proofId } = await clientSignedMatter(h());
    const { bundle, pinned } = await bundleOf(h(), proofId);
    const trust = { trustedKeys: pinned };
    const expected = [
      /mandateHash but no mandate signature/,
      /\(delivery\.submitted\) has no delivery signature/,
      /\(dispute\.opened\) has no dispute\.open signature/,
      /\(dispute\.evidence\) has no dispute\.evidence signature/,
      /by co-signature\) has no ruling signature of the payer/,
      /by co-signature\) has no ruling signature of the payee/,
    ];
    bundle.parties!.signatures.forEach((_, i) => {
      const b = structuredClone(bundle);
      b.parties!.signatures.splice(i, 1);
      const bad = verifyBundle(b, trust).checks.filter((c) => !c.ok);
      assert.deepEqual(
        bad.map((c) => c.name),
        ['parties.complete'],
        `dropping ${i}`,
      );
      assert.match(bad[0].detail, expected[i]);
    });
    // A bundle from before parties were carried says so rather than passing silently.
    const legacy = structuredClone(bundle);
    delete legacy.parties;
    assert.deepEqual(
      verifyBundle(legacy, trust)
        .checks.filter((c) => !c.ok)
        .map((c) => c.name),
      ['parties.complete'],
    );
  });

  test('a valid signature that does not belong to the matter fails its own check, saying why', async () => {
    const { proofId, arbiter } = await sandboxArbiterMatter(h());
    const { bundle, pinned } = await bundleOf(h(), proofId);
    const rulingAt = bundle.parties!.signatures.findIndex((s) => s.kind === 'ruling');
    const stranger = outsideKey();
    const cases: Array<[string, (s: PartySignature) => void, RegExp]> = [
      [
        'signed by an outsider',
        (s) => {
          s.publicKey = stranger.publicKey;
          s.signature = stranger.sign(s.signedBody);
        },
        /signer is neither payer, payee nor the named arbiter/,
      ],
      [
        'pointed at another trail entry',
        (s) => {
          s.trailIndex = 0;
        },
        /trail entry 0 is escrow\.created, not dispute\.resolved/,
      ],
    ];
    assert.equal(bundle.parties!.signatures[rulingAt].publicKey, arbiter);
    for (const [what, change, detail] of cases) {
      const b = structuredClone(bundle);
      change(b.parties!.signatures[rulingAt]);
      const bad = verifyBundle(b, { trustedKeys: pinned }).checks.filter((c) => !c.ok);
      assert.equal(bad[0].name, `parties[${rulingAt}].ruling`, what);
      assert.match(bad[0].detail, detail, what);
    }
  });

  test('a body changed and re-signed by the right party still fails: it no longer matches the matter', async () => {
    const matter = await clientSignedMatter(h());
    const { bundle, pinned } = await bundleOf(h(), matter.proofId);
    const x = await x402Matter(h());
    const { bundle: paid } = await bundleOf(h(), x.proofId);
    const { principal, payer, payee } = matter.keys;
    // [which bundle, signature index, key that re-signs, change to the signed body, what the check must say]
    const rows: Array<[Bundle, number, string, (b: any) => void, RegExp]> = [
      [
        bundle,
        0,
        principal.secretKey,
        (b) => (b.caps.perEscrowMax = '99'),
        /sha256\(JCS\(\{principal, caps\}\)\) is not proof\.mandateHash/,
      ],
      [bundle, 1, payee.secretKey, (b) => (b.contentHash = 'e'.repeat(64)), /signed contentHash is not the delivery's/],
      [bundle, 2, payer.secretKey, (b) => (b.reason = 'another reason'), /signed reason is not the dispute's/],
      [
        bundle,
        3,
        payee.secretKey,
        (b) => (b.contentHash = 'e'.repeat(64)),
        /signed contentHash \(or the note's hash\) is not the evidence's/,
      ],
      [
        bundle,
        3,
        payee.secretKey,
        (b) => (b.escrowId = 'esc_01jd0000000000000000000000'),
        /signed body is not \{escrowId: esc_\w+, action: "dispute\.evidence"/,
      ],
      [bundle, 4, payer.secretKey, (b) => (b.outcome = 'refund'), /signed outcome\/shares are not the ruling the trail records/],
      [bundle, 4, payer.secretKey, (b) => (b.shares = { payerBps: 1, payeeBps: 9999 }), /signed outcome\/shares/],
      [paid, 0, x.payer.secretKey, (b) => (b.value = '0.02'), /authorization\.value is not the proof's amount 0\.01/],
      [paid, 0, x.payer.secretKey, (b) => (b.asset = 'EURC'), /authorization\.asset is not the proof's asset/],
    ];
    for (const [source, i, secretKey, change, detail] of rows) {
      const b = structuredClone(source);
      const s = b.parties!.signatures[i];
      change(s.signedBody);
      s.signature = signBody(secretKey, s.signedBody).signature;
      const bad = verifyBundle(b, { trustedKeys: pinned }).checks.filter((c) => !c.ok);
      assert.deepEqual(
        bad.map((c) => c.name),
        [`parties[${i}].${s.kind}`],
        detail.source,
      );
      assert.match(bad[0].detail, /verifies but does not belong to this matter/);
      assert.match(bad[0].detail, detail);
    }
  });

  test('a malformed parties field fails bundle.format naming the field', async () => {
    const { proofId } = await x402Matter(h());
    const { bundle } = await bundleOf(h(), proofId);
    const b = structuredClone(bundle) as any;
    b.parties.signatures[0].publicKey = 'nope';
    const r = verifyBundle(b);
    assert.deepEqual(
      r.checks.map((c) => [c.name, c.detail]),
      [['bundle.format', 'parties.signatures[0].publicKey must be 64 lowercase hex characters']],
    );
  });
});
