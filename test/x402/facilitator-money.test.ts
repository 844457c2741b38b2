// The facilitator's money fields through the front door (app.fetch), on PGlite and Postgres: fee
// bounds and absolute deadlines in the requirements (checked, and bound by the payer's signature),
// and the settlement status of a payment in each state it can reach.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, makeHarness, type Harness } from '../harness.ts';
import { generateKeys, type Terms } from '@escrow-settlement/client';
import { signCapture, signCollect, signRefund, signVoid, type BoundExtra } from '@escrow-settlement/client/x402/authCapture';
import { sweepOnce } from '../../src/jobs/sweep.ts';
import { verifyBundle } from '@escrow-settlement/protocol/verify';

const TERMS: Terms = { description: 'a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const RESOURCE = 'https://shop.example/report';
const V = '/v1/x402/facilitator/verify';
const S = '/v1/x402/facilitator/settle';
const status = (h: Harness, id: string, headers: Record<string, string> = {}) =>
  h.req('GET', `/v1/x402/facilitator/payments/${id}`, undefined, headers);
const inSeconds = (s: number, from = Date.now()) => new Date(from + s * 1000).toISOString();

function requirements(payTo: string, extra: Record<string, unknown> = {}) {
  return {
    scheme: 'auth-capture',
    network: 'escrow:sandbox',
    asset: 'USDC',
    amount: '10000',
    payTo,
    maxTimeoutSeconds: 60,
    extra: { paymentFlow: 'escrow', terms: TERMS, ...extra },
  };
}

/** A collect request for `extra`; the payer signs `bound` (by default exactly the bound fields of extra). */
function collect(payerSk: string, payTo: string, extra: Record<string, unknown> = {}, bound?: BoundExtra) {
  const req = requirements(payTo, extra);
  const { minFeeBps, maxFeeBps, feeRecipient, captureDeadline, refundDeadline } = extra as BoundExtra;
  const payload = signCollect(payerSk, {
    to: payTo,
    value: req.amount,
    asset: 'USDC',
    resource: RESOURCE,
    terms: TERMS,
    maxTimeoutSeconds: 60,
    bound: bound ?? { minFeeBps, maxFeeBps, feeRecipient, captureDeadline, refundDeadline },
  });
  return {
    x402Version: 2,
    paymentPayload: { x402Version: 2, resource: { url: RESOURCE }, accepted: req, payload },
    paymentRequirements: req,
  };
}

/** A lifecycle settle (capture, void) on the requirements a collect was made with. */
const lifecycle = (body: ReturnType<typeof collect>, payload: unknown) => ({
  x402Version: 2,
  paymentPayload: { ...body.paymentPayload, payload },
  paymentRequirements: body.paymentRequirements,
});

async function counts(h: Harness) {
  const [r] = await h.db.query(
    'SELECT (SELECT count(*) FROM escrows)::int AS escrows, (SELECT count(*) FROM x402_payments)::int AS payments, (SELECT count(*) FROM proofs)::int AS proofs',
  );
  return r;
}

function refused(r: { status: number; body: any; text: string }, field: 'invalidReason' | 'errorReason', code: string, message: RegExp) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body[field === 'invalidReason' ? 'isValid' : 'success'], false, r.text);
  assert.equal(r.body[field], code, r.text);
  assert.match(r.body[field === 'invalidReason' ? 'invalidMessage' : 'errorMessage'], message);
}

describeStores('x402 facilitator: fee bounds and deadlines', (h) => {
  const payer = generateKeys();
  const payee = generateKeys();
  const platform = generateKeys().publicKey;

  test('malformed fee bounds and deadlines are refused naming the field, at verify and settle, writing nothing', async () => {
    const before = await counts(h());
    const cd = inSeconds(120);
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      [
        'bps above 10000',
        { minFeeBps: 0, maxFeeBps: 10001, feeRecipient: platform },
        'malformed_header',
        /extra\.maxFeeBps must be a whole number of basis points from 0 to 10000/,
      ],
      [
        'negative bps',
        { minFeeBps: -1, maxFeeBps: 10, feeRecipient: platform },
        'malformed_header',
        /extra\.minFeeBps must be a whole number/,
      ],
      [
        'fractional bps',
        { minFeeBps: 1.5, maxFeeBps: 10, feeRecipient: platform },
        'malformed_header',
        /extra\.minFeeBps must be a whole number/,
      ],
      ['bps as a string', { minFeeBps: '1', maxFeeBps: 10, feeRecipient: platform }, 'malformed_header', /extra\.minFeeBps/],
      [
        'min above max',
        { minFeeBps: 300, maxFeeBps: 200, feeRecipient: platform },
        'malformed_header',
        /minFeeBps \(300\) must not exceed extra\.maxFeeBps \(200\)/,
      ],
      [
        'one bound only',
        { maxFeeBps: 200, feeRecipient: platform },
        'malformed_header',
        /extra\.minFeeBps is required with the other fee bound/,
      ],
      [
        'a fee with nobody to get it',
        { minFeeBps: 0, maxFeeBps: 200 },
        'malformed_header',
        /extra\.feeRecipient is required when extra\.maxFeeBps is above 0/,
      ],
      [
        'a recipient without bounds',
        { feeRecipient: platform },
        'malformed_header',
        /extra\.feeRecipient needs extra\.minFeeBps and extra\.maxFeeBps/,
      ],
      ['a recipient that is no key', { minFeeBps: 0, maxFeeBps: 1, feeRecipient: 'platform' }, 'malformed_header', /feeRecipient/],
      ['a deadline that is no timestamp', { captureDeadline: 'tomorrow' }, 'malformed_header', /extra\.captureDeadline/],
      ['a capture deadline passed', { captureDeadline: inSeconds(-5) }, 'payment_invalid', /extra\.captureDeadline \(.+\) has passed/],
      ['a refund deadline passed', { refundDeadline: inSeconds(-5) }, 'payment_invalid', /extra\.refundDeadline \(.+\) has passed/],
      [
        'refund before capture',
        { captureDeadline: cd, refundDeadline: inSeconds(60) },
        'malformed_header',
        /extra\.refundDeadline \(.+\) must be after extra\.captureDeadline/,
      ],
      ['refund at capture', { captureDeadline: cd, refundDeadline: cd }, 'malformed_header', /must be after extra\.captureDeadline/],
      [
        'refund before the implied capture deadline',
        { refundDeadline: inSeconds(30) },
        'malformed_header',
        /must be after the capture deadline \(.+the delivery deadline its timeouts imply\)/,
      ],
      [
        'a capture deadline and a delivery timeout',
        { captureDeadline: cd, timeouts: { deliverWithinSeconds: 60 } },
        'malformed_header',
        /captureDeadline replaces extra\.timeouts\.deliverWithinSeconds/,
      ],
      [
        'a capture deadline beyond ten years',
        { captureDeadline: inSeconds(315_360_000 + 3600) },
        'malformed_header',
        /captureDeadline is more than 315360000 s away/,
      ],
    ];
    for (const [name, extra, code, message] of cases) {
      const body = collect(payer.secretKey, payee.publicKey, extra);
      for (const [path, field] of [
        [V, 'invalidReason'],
        [S, 'errorReason'],
      ] as const) {
        const r = await h().req('POST', path, body);
        try {
          refused(r, field, code, message);
        } catch (err) {
          throw new Error(`${name} at ${path}: ${(err as Error).message}`);
        }
      }
    }
    assert.deepEqual(await counts(h()), before);
  });

  test("the payer's authorization binds the fee bounds and deadlines: a mismatch or a tampered field is refused", async () => {
    const before = await counts(h());
    const extra = {
      minFeeBps: 100,
      maxFeeBps: 250,
      feeRecipient: platform,
      captureDeadline: inSeconds(120),
      refundDeadline: inSeconds(3600),
    };
    const cases: Array<[string, ReturnType<typeof collect>, string, RegExp]> = [
      [
        'not bound at all',
        collect(payer.secretKey, payee.publicKey, extra, {}),
        'payment_invalid',
        /authorization\.minFeeBps must be paymentRequirements\.extra\.minFeeBps \(100\), got undefined/,
      ],
      [
        'a higher fee bound',
        collect(payer.secretKey, payee.publicKey, extra, { ...extra, maxFeeBps: 500 }),
        'payment_invalid',
        /authorization\.maxFeeBps must be paymentRequirements\.extra\.maxFeeBps \(250\), got 500/,
      ],
      [
        'another recipient',
        collect(payer.secretKey, payee.publicKey, extra, { ...extra, feeRecipient: payee.publicKey }),
        'payment_invalid',
        /authorization\.feeRecipient/,
      ],
      [
        'a later capture deadline',
        collect(payer.secretKey, payee.publicKey, extra, { ...extra, captureDeadline: inSeconds(600) }),
        'payment_invalid',
        /authorization\.captureDeadline/,
      ],
      [
        'another refund deadline',
        collect(payer.secretKey, payee.publicKey, extra, { ...extra, refundDeadline: inSeconds(7200) }),
        'payment_invalid',
        /authorization\.refundDeadline/,
      ],
      [
        'bound where none is offered',
        collect(payer.secretKey, payee.publicKey, {}, { minFeeBps: 0, maxFeeBps: 0 }),
        'payment_invalid',
        /authorization\.minFeeBps must be paymentRequirements\.extra\.minFeeBps \(absent, as paymentRequirements\.extra has none\)/,
      ],
      [
        'both edited after signing',
        (() => {
          const b = collect(payer.secretKey, payee.publicKey, extra);
          const raised = { ...extra, maxFeeBps: 10000 };
          (b.paymentPayload.payload.authorization as unknown as Record<string, unknown>).maxFeeBps = 10000;
          b.paymentRequirements = requirements(payee.publicKey, raised);
          b.paymentPayload.accepted = b.paymentRequirements;
          return b;
        })(),
        'bad_signature',
        /signature does not verify/,
      ],
    ];
    for (const [name, body, code, message] of cases) {
      for (const [path, field] of [
        [V, 'invalidReason'],
        [S, 'errorReason'],
      ] as const) {
        try {
          refused(await h().req('POST', path, body), field, code, message);
        } catch (err) {
          throw new Error(`${name} at ${path}: ${(err as Error).message}`);
        }
      }
    }
    assert.deepEqual(await counts(h()), before);

    const ok = collect(payer.secretKey, payee.publicKey, extra);
    assert.deepEqual((await h().req('POST', V, ok)).body, { isValid: true, payer: payer.publicKey });
    const settled = await h().req('POST', S, ok);
    assert.equal(settled.body.success, true, settled.text);
    // The bundle carries the authorization as signed: the fee bounds and deadlines with it.
    const signed = (
      await h().db.query("SELECT signed_body FROM party_signatures WHERE escrow_id = $1 AND kind = 'x402'", [settled.body.transaction])
    )[0];
    assert.deepEqual(Object.fromEntries(Object.entries(JSON.parse(signed.signed_body)).filter(([k]) => k in extra)), extra);
  });

  test('settlement status: authorized, captured, failed and voided, with amounts, proofs and deadlines', async () => {
    const extra = { captureDeadline: inSeconds(600), refundDeadline: inSeconds(7200) };
    const body = collect(payer.secretKey, payee.publicKey, extra);
    const id = (await h().req('POST', S, body)).body.transaction as string;
    const held = await status(h(), id);
    assert.equal(held.status, 200, held.text);
    assert.deepEqual(held.body, {
      paymentId: id,
      status: 'authorized',
      amounts: { authorized: '10000', captured: '0', refunded: '0', fee: '0' },
      proofs: [],
      captureDeadline: extra.captureDeadline,
      refundDeadline: extra.refundDeadline,
    });
    // The delivery deadline is the capture deadline (rounded up to the second).
    const escrow = (await h().req('GET', `/v1/escrows/${id}`)).body;
    const late = Date.parse(escrow.deadlineAt) - Date.parse(extra.captureDeadline);
    assert.ok(late >= 0 && late < 2000, `deadlineAt ${escrow.deadlineAt} is the captureDeadline ${extra.captureDeadline}`);

    const captured = (await h().req('POST', S, lifecycle(body, signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' } }))))
      .body;
    assert.equal(captured.success, true, JSON.stringify(captured));
    assert.deepEqual((await status(h(), id)).body, {
      paymentId: id,
      status: 'captured',
      amounts: { authorized: '10000', captured: '10000', refunded: '0', fee: '0' },
      proofs: [captured.transaction],
      captureDeadline: extra.captureDeadline,
      refundDeadline: extra.refundDeadline,
    });

    // Without absolute deadlines: the capture deadline is the funded escrow's, the refund deadline unknown.
    const plain = collect(payer.secretKey, payee.publicKey);
    const pid = (await h().req('POST', S, plain)).body.transaction as string;
    const funded = (await h().req('GET', `/v1/escrows/${pid}`)).body;
    const failed = await h().req(
      'POST',
      S,
      lifecycle(plain, signCapture(payee.secretKey, { escrowId: pid, payload: { body: 'no title' } })),
    );
    assert.equal(failed.body.errorReason, 'verdict_failed', failed.text);
    assert.deepEqual((await status(h(), pid)).body, {
      paymentId: pid,
      status: 'failed',
      amounts: { authorized: '10000', captured: '0', refunded: '0', fee: '0' },
      proofs: [],
      captureDeadline: funded.deadlineAt,
      refundDeadline: null,
    });
    const voided = await h().req('POST', S, lifecycle(plain, signVoid(payee.secretKey, { escrowId: pid })));
    assert.equal(voided.body.success, true, voided.text);
    const after = (await status(h(), pid)).body;
    assert.equal(after.status, 'voided');
    assert.deepEqual(after.amounts, { authorized: '10000', captured: '0', refunded: '0', fee: '0' });
    assert.deepEqual(after.proofs, [voided.body.transaction]);
  });

  test('settlement status: unknown, malformed or REST escrow ids are 404; the route takes no body', async () => {
    expectError(await status(h(), 'esc_01jzzzzzzzzzzzzzzzzzzzzzzz'), 404, 'not_found');
    expectError(await status(h(), 'nonsense'), 404, 'not_found');
    const rest = await h().req('POST', '/v1/escrows', {
      amount: '0.01',
      asset: 'USDC',
      terms: TERMS,
      payer: { publicKey: payer.publicKey },
      payee: { publicKey: payee.publicKey },
    });
    assert.equal(rest.status, 201, rest.text);
    const m = expectError(await status(h(), rest.body.id), 404, 'not_found');
    assert.match(m, /no x402 payment/);
  });
});

describeStores('x402 facilitator: partial capture and the fee', (h) => {
  const payer = generateKeys();
  const payee = generateKeys();
  const platform = generateKeys().publicKey;
  const FEES = { minFeeBps: 100, maxFeeBps: 500, feeRecipient: platform };

  test('a capture of part of the hold with a fee within the bounds: the rest goes back in the same closing', async () => {
    const body = collect(payer.secretKey, payee.publicKey, FEES);
    const id = (await h().req('POST', S, body)).body.transaction as string;
    assert.equal((await h().req('GET', `/v1/escrows/${id}`)).body.fee, undefined, 'held without a fee: the capture sets it');
    const r = await h().req(
      'POST',
      S,
      lifecycle(body, signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' }, amount: '4000', feeBps: 250 })),
    );
    assert.equal(r.body.success, true, r.text);
    const proof = (await h().req('GET', `/v1/proofs/${r.body.transaction}`)).body;
    assert.equal(proof.outcome, 'released');
    assert.equal(proof.captured, '0.004');
    assert.deepEqual(proof.fee, { bps: 250, recipient: platform, amount: '0.0001' });
    assert.deepEqual(proof.payouts, { payee: '0.0039', payer: '0.006', fee: '0.0001' });
    assert.deepEqual((await status(h(), id)).body.amounts, { authorized: '10000', captured: '4000', refunded: '0', fee: '100' });
    assert.equal((await status(h(), id)).body.status, 'captured');
    const checked = (await h().req('GET', `/v1/proofs/${r.body.transaction}/verify`)).body;
    assert.deepEqual([checked.signatureValid, checked.trailIntact, checked.trailHeadMatches], [true, true, true]);
  });

  test("without feeBps the capture takes minFeeBps; @x402/core's lowered requirements amount is the capture's", async () => {
    const body = collect(payer.secretKey, payee.publicKey, FEES);
    const id = (await h().req('POST', S, body)).body.transaction as string;
    // @x402/core's settlement override sends the requirements with the amount lowered to the capture.
    const lowered = { ...body.paymentRequirements, amount: '2000' };
    const capture = signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' }, amount: '2000' });
    const r = await h().req('POST', S, {
      x402Version: 2,
      paymentPayload: { ...body.paymentPayload, payload: capture },
      paymentRequirements: lowered,
    });
    assert.equal(r.body.success, true, r.text);
    const proof = (await h().req('GET', `/v1/proofs/${r.body.transaction}`)).body;
    assert.deepEqual(proof.fee, { bps: 100, recipient: platform, amount: '0.00002' });
    assert.deepEqual(proof.payouts, { payee: '0.00198', payer: '0.008', fee: '0.00002' });
    // A lowered amount the capture does not claim is still a mismatch with what the payer accepted.
    const other = collect(payer.secretKey, payee.publicKey, FEES);
    const oid = (await h().req('POST', S, other)).body.transaction as string;
    const full = signCapture(payee.secretKey, { escrowId: oid, payload: { title: 'ok' } });
    const mismatch = await h().req('POST', S, {
      x402Version: 2,
      paymentPayload: { ...other.paymentPayload, payload: full },
      paymentRequirements: { ...other.paymentRequirements, amount: '2000' },
    });
    refused(mismatch, 'errorReason', 'payment_invalid', /accepted differs from paymentRequirements/);
  });

  test('capture amounts and fees outside what the payer authorized are refused, writing nothing', async () => {
    const body = collect(payer.secretKey, payee.publicKey, FEES);
    const id = (await h().req('POST', S, body)).body.transaction as string;
    const plain = collect(payer.secretKey, payee.publicKey);
    const pid = (await h().req('POST', S, plain)).body.transaction as string;
    const cap = (o: Record<string, unknown>) => signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' }, ...o });
    const before = await counts(h());
    const cases: Array<[string, ReturnType<typeof collect>, unknown, string, RegExp]> = [
      [
        'more than authorized',
        body,
        cap({ amount: '10001' }),
        'payment_invalid',
        /amount 10001 is more than the 10000 atomic units authorized/,
      ],
      [
        'zero',
        body,
        { ...cap({ amount: '1' }), amount: '0' },
        'malformed_header',
        /payload\.amount must be a whole number of atomic units greater than 0/,
      ],
      ['a decimal', body, { ...cap({ amount: '1' }), amount: '0.5' }, 'malformed_header', /payload\.amount must be a whole number/],
      ['a number', body, { ...cap({ amount: '1' }), amount: 5 }, 'malformed_header', /amount/],
      [
        'fee above the bounds',
        body,
        cap({ amount: '4000', feeBps: 501 }),
        'payment_invalid',
        /feeBps 501 is outside the bounds the payer authorized \(minFeeBps 100, maxFeeBps 500\)/,
      ],
      ['fee below the bounds', body, cap({ feeBps: 99 }), 'payment_invalid', /feeBps 99 is outside the bounds/],
      ['a fractional fee', body, cap({ feeBps: 1.5 }), 'malformed_header', /feeBps must be a whole number of basis points from 0 to 10000/],
      [
        'a fee without bounds',
        plain,
        signCapture(payee.secretKey, { escrowId: pid, payload: { title: 'ok' }, feeBps: 10 }),
        'payment_invalid',
        /feeBps 10: payment .+ was authorized without a fee/,
      ],
      [
        'an amount the delivery did not sign',
        body,
        { ...cap({}), amount: '4000' },
        'bad_signature',
        /JCS \{escrowId, contentHash, submittedAt, amount\}/,
      ],
      ['a signed amount changed', body, { ...cap({ amount: '4000' }), amount: '5000' }, 'bad_signature', /does not verify/],
    ];
    for (const [name, b, payload, code, message] of cases) {
      try {
        refused(await h().req('POST', S, lifecycle(b, payload)), 'errorReason', code, message);
      } catch (err) {
        throw new Error(`${name}: ${(err as Error).message}`);
      }
    }
    assert.deepEqual(await counts(h()), before);
    assert.equal((await h().req('GET', `/v1/escrows/${id}`)).body.state, 'funded');
    assert.equal((await status(h(), id)).body.status, 'authorized');
  });
});

describeStores('x402 facilitator: refunds after release', (h) => {
  const payer = generateKeys();
  const payee = generateKeys();
  const platform = generateKeys().publicKey;

  test('the payee refunds part, then the rest of its net payout; over it, twice or unsigned is refused', async () => {
    const body = collect(payer.secretKey, payee.publicKey, { minFeeBps: 100, maxFeeBps: 100, feeRecipient: platform });
    const id = (await h().req('POST', S, body)).body.transaction as string;
    // Nothing captured yet: nothing to refund after release.
    const early = await h().req('POST', S, lifecycle(body, signRefund(payee.secretKey, { escrowId: id, amount: '1' })));
    refused(early, 'errorReason', 'invalid_state', /only a settled or resolved escrow that paid the payee/);
    const captured = await h().req(
      'POST',
      S,
      lifecycle(body, signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' }, amount: '4000' })),
    );
    assert.equal(captured.body.success, true, captured.text);
    // Net payout: 4000 less the 1% fee = 3960 atomic units.
    const before = await counts(h());
    const bad: Array<[string, unknown, string, RegExp]> = [
      [
        'a stranger signs as payTo',
        {
          ...signRefund(payee.secretKey, { escrowId: id, amount: '1000' }),
          signature: signRefund(generateKeys().secretKey, { escrowId: id, amount: '1000' }).signature.signature,
        },
        'bad_signature',
        /does not verify with payTo/,
      ],
      [
        'signed for another amount',
        { ...signRefund(payee.secretKey, { escrowId: id, amount: '1000' }), amount: '2000' },
        'bad_signature',
        /does not verify/,
      ],
      [
        'another signer named',
        {
          ...signRefund(payee.secretKey, { escrowId: id, amount: '1000' }),
          signature: { signer: payer.publicKey, signature: '00'.repeat(64) },
        },
        'wrong_payee',
        /refund's signer is not the payment's payee/,
      ],
      [
        'zero',
        { ...signRefund(payee.secretKey, { escrowId: id, amount: '1' }), amount: '0' },
        'malformed_header',
        /payload\.amount must be a whole number of atomic units greater than 0/,
      ],
      [
        'over the net payout',
        signRefund(payee.secretKey, { escrowId: id, amount: '3961' }),
        'invalid_state',
        /0\.00396 of the payee's net payout 0\.00396 remains to refund/,
      ],
      [
        'signed an hour ago',
        signRefund(payee.secretKey, { escrowId: id, amount: '1000', signedAt: inSeconds(-3600) }),
        'payment_invalid',
        /signedAt/,
      ],
      ['at verify', null, 'malformed_header', /verify checks a collect authorization/],
    ];
    for (const [name, payload, code, message] of bad) {
      try {
        if (payload === null) {
          const r = await h().req('POST', V, lifecycle(body, signRefund(payee.secretKey, { escrowId: id, amount: '1' })));
          refused(r, 'invalidReason', code, message);
        } else refused(await h().req('POST', S, lifecycle(body, payload)), 'errorReason', code, message);
      } catch (err) {
        throw new Error(`${name}: ${(err as Error).message}`);
      }
    }
    assert.deepEqual(await counts(h()), before, 'no refused refund wrote a proof');

    const consent = signRefund(payee.secretKey, { escrowId: id, amount: '1000', reason: 'one page missing' });
    const first = await h().req('POST', S, lifecycle(body, consent));
    assert.equal(first.body.success, true, first.text);
    assert.match(first.body.transaction, /^prf_/);
    assert.equal(first.body.amount, '1000');
    assert.deepEqual(first.body.extra, { escrowId: id, refundedTotal: '1000' });
    assert.deepEqual((await h().req('POST', S, lifecycle(body, consent))).body, first.body, 'the same consent answers the same refund');
    const adjustment = (await h().req('GET', `/v1/proofs/${first.body.transaction}`)).body;
    assert.equal(adjustment.outcome, 'refunded-after-release');
    assert.equal(adjustment.adjusts, captured.body.transaction);
    assert.equal(adjustment.reason, 'one page missing');
    let s = (await status(h(), id)).body;
    assert.equal(s.status, 'partially_refunded');
    assert.deepEqual(s.amounts, { authorized: '10000', captured: '4000', refunded: '1000', fee: '40' });
    assert.deepEqual(s.proofs, [captured.body.transaction, first.body.transaction]);
    assert.equal(s.refundDeadline, (await h().req('GET', `/v1/escrows/${id}`)).body.refundDeadline);

    const rest = await h().req('POST', S, lifecycle(body, signRefund(payee.secretKey, { escrowId: id, amount: '2960' })));
    assert.equal(rest.body.success, true, rest.text);
    assert.deepEqual(rest.body.extra, { escrowId: id, refundedTotal: '3960' });
    s = (await status(h(), id)).body;
    assert.equal(s.status, 'refunded');
    assert.deepEqual(s.amounts, { authorized: '10000', captured: '4000', refunded: '3960', fee: '40' });
    assert.equal(s.proofs.length, 3);
    const more = await h().req('POST', S, lifecycle(body, signRefund(payee.secretKey, { escrowId: id, amount: '1' })));
    refused(more, 'errorReason', 'invalid_state', /0 of the payee's net payout 0\.00396 remains/);
    // The closing's bundle carries both adjustments and verifies.
    const bundle = (await h().req('GET', `/v1/proofs/${captured.body.transaction}/bundle`)).body;
    assert.equal(bundle.adjustments.length, 2);
  });
});

describeStores('x402 facilitator: the capture deadline passes', (h) => {
  test('a capture after captureDeadline is refused; the sweep returns the hold and the status says expired', async () => {
    const payer = generateKeys();
    const payee = generateKeys();
    const body = collect(payer.secretKey, payee.publicKey, { captureDeadline: inSeconds(30) });
    const id = (await h().req('POST', S, body)).body.transaction as string;
    await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 31 });
    const now = Date.parse((await h().req('GET', '/v1/sandbox/clock')).body.now);
    const late = signCapture(payee.secretKey, { escrowId: id, payload: { title: 'late' }, submittedAt: new Date(now).toISOString() });
    refused(await h().req('POST', S, lifecycle(body, late)), 'errorReason', 'payment_invalid', /past its captureDeadline/);
    assert.equal((await h().req('GET', `/v1/escrows/${id}`)).body.state, 'funded', 'the refused capture wrote nothing');
    await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 2 });
    assert.ok((await sweepOnce(h().app.svc)).closed >= 1);
    const s = (await status(h(), id)).body;
    assert.equal(s.status, 'expired', JSON.stringify(s));
    assert.equal(s.proofs.length, 1);
    assert.deepEqual(s.amounts, { authorized: '10000', captured: '0', refunded: '0', fee: '0' });
    // A void after the deadline's refund is not this void's outcome.
    const v = signVoid(payee.secretKey, { escrowId: id, signedAt: new Date(now + 2000).toISOString() });
    refused(await h().req('POST', S, lifecycle(body, v)), 'errorReason', 'payment_invalid', /already refunded without a void/);
  });

  test('a refund after the refundDeadline the payer bound is refused invalid_state, naming it', async () => {
    const payer = generateKeys();
    const payee = generateKeys();
    const clock = Date.parse((await h().req('GET', '/v1/sandbox/clock')).body.now);
    const extra = { captureDeadline: inSeconds(30, clock), refundDeadline: inSeconds(120, clock) };
    const body = collect(payer.secretKey, payee.publicKey, extra, extra);
    const collected = await h().req('POST', S, body);
    assert.equal(collected.body.success, true, collected.text);
    const id = collected.body.transaction as string;
    const at = (s: number) => new Date(clock + s * 1000).toISOString();
    const captured = await h().req(
      'POST',
      S,
      lifecycle(body, signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' }, submittedAt: at(0) })),
    );
    assert.equal(captured.body.success, true, captured.text);
    const inTime = await h().req('POST', S, lifecycle(body, signRefund(payee.secretKey, { escrowId: id, amount: '100', signedAt: at(0) })));
    assert.equal(inTime.body.success, true, inTime.text);
    await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 121 });
    const late = signRefund(payee.secretKey, { escrowId: id, amount: '100', signedAt: at(121) });
    refused(await h().req('POST', S, lifecycle(body, late)), 'errorReason', 'invalid_state', /refundDeadline .+ has passed/);
    const s = (await status(h(), id)).body;
    assert.equal(s.status, 'partially_refunded');
    assert.equal(s.refundDeadline, extra.refundDeadline);
  });
});

describeStores("x402 facilitator: the bound refundDeadline and the escrow's own refund window", (h) => {
  test("the bound refundDeadline ends the escrow's own window too: a REST refund after it is refused, and verifiers read it", async () => {
    const payer = generateKeys();
    const payee = generateKeys();
    const clock = Date.parse((await h().req('GET', '/v1/sandbox/clock')).body.now);
    const extra = { captureDeadline: inSeconds(60, clock), refundDeadline: inSeconds(120, clock) };
    const body = collect(payer.secretKey, payee.publicKey, extra, extra);
    const collected = await h().req('POST', S, body);
    assert.equal(collected.body.success, true, collected.text);
    const id = collected.body.transaction as string;
    const at = (s: number) => new Date(clock + s * 1000).toISOString();
    // Captured 50 s after the collect: a window counted from the capture would end at 170 s.
    await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 50 });
    const captured = await h().req(
      'POST',
      S,
      lifecycle(body, signCapture(payee.secretKey, { escrowId: id, payload: { title: 'ok' }, submittedAt: at(50) })),
    );
    assert.equal(captured.body.success, true, captured.text);
    const view = (await h().req('GET', `/v1/escrows/${id}`)).body;
    assert.equal(view.refundDeadline, extra.refundDeadline, 'the escrow shows the bound deadline');
    // A REST refund by the payee inside the window; its adjustment verifies against the bound deadline.
    const rest = (signedAt: string) => {
      const c = signRefund(payee.secretKey, { escrowId: id, amount: '100', signedAt });
      return { amount: '0.0001', signedAt, signature: c.signature };
    };
    const inTime = await h().req('POST', `/v1/escrows/${id}/refunds`, rest(at(60)));
    assert.equal(inTime.status, 201, inTime.text);
    const bundle = (await h().req('GET', `/v1/proofs/${captured.body.transaction}/bundle`)).body;
    const pinned = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys;
    const v = verifyBundle(bundle, { trustedKeys: pinned });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
    const deadline = v.checks.find((c) => c.name === 'adjustments[0].deadline')!;
    assert.match(deadline.detail, new RegExp(`before the refund deadline ${extra.refundDeadline.replace(/\./g, '\\.')}`));
    // The same bundle with the authorization's refundDeadline read as absent: the closing's record disagrees.
    const unbound = structuredClone(bundle);
    for (const sig of unbound.parties.signatures) if (sig.kind === 'x402') delete sig.signedBody.refundDeadline;
    const check = verifyBundle(unbound, { trustedKeys: pinned }).checks.find((c) => c.name === 'adjustments[0].deadline')!;
    assert.equal(check.ok, false);
    assert.match(check.detail, /records refundDeadline .+, not issuedAt \+ 120 s/);
    // At 121 s (49 s before a window counted from the capture would end): refused, naming the deadline.
    await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 71 });
    assert.match(
      expectError(await h().req('POST', `/v1/escrows/${id}/refunds`, rest(at(121))), 409, 'invalid_state'),
      /refund deadline .+ has passed/,
    );
    assert.equal((await status(h(), id)).body.amounts.refunded, '100');
  });
});

test('hosted: the settlement status needs a key, and a key sees only its own payments', async () => {
  const h = await makeHarness('pglite', { API_KEY: 'facilitator-root-key-0123456' });
  try {
    const root = { authorization: 'Bearer facilitator-root-key-0123456' };
    const mint = async () => ({ authorization: `Bearer ${(await h.req('POST', '/v1/admin/keys', {}, root)).body.secret}` });
    const [a, b] = [await mint(), await mint()];
    const body = collect(generateKeys().secretKey, generateKeys().publicKey);
    const id = (await h.req('POST', S, body, a)).body.transaction as string;
    expectError(await status(h, id), 401, 'unauthorized');
    expectError(await status(h, id, b), 404, 'not_found');
    assert.equal((await status(h, id, a)).body.status, 'authorized');
    assert.equal((await status(h, id, root)).body.status, 'authorized');
  } finally {
    await h.close();
  }
});
