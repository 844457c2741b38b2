// Capture and void: the resource server's side of an auth-capture payment (docs/x402.md). A capture
// is the client-signed delivery of the REST API (submitDelivery), judged against the escrow's terms;
// a void is its refund (refundEscrow); a refund after release is the REST API's (refundAfterRelease).
// Each consent is single use: the one acted on answers its
// stored outcome again, another consent for a payment already captured or voided is refused.
import type { Services } from '../../services.ts';
import type { Caller } from '../../http/route.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { AppError } from '../../errors.ts';
import { canonicalPayload, deliverySigningBody, MAX_SKEW_MS, submitDelivery } from '../../escrow/deliver.ts';
import { refundEscrow } from '../../escrow/refund.ts';
import { collectHash } from './collect.ts';
import { captureAnswer, findPayment, voidAnswer, type Payment, type SettleAnswer } from './payment.ts';
import { asRefusal, Refusal, refuse, refusing } from './refusal.ts';
import type { Checked } from './requirements.ts';
import type { Authorization, Capture, Refund, Void } from './wire.ts';
import { refundAfterRelease, refundSigningBody } from '../../escrow/refundAfterRelease.ts';
import { amountMicro } from '@escrow-settlement/protocol/amounts';
import type { Fee } from '../../escrow/escrowRow.ts';

/** The bytes the payee signs to void: JCS {escrowId, action: "void", signedAt} (docs/x402.md). */
export const voidSigningBody = (escrowId: string, signedAt: string) => ({ escrowId, action: 'void', signedAt });

/** The payment named by paymentId, checked to be the one these requirements (and authorization) collected. */
async function ownPayment(
  svc: Services,
  caller: Caller,
  c: Checked,
  paymentId: string,
  authorization?: Authorization,
  signature?: string,
): Promise<Payment> {
  const p = await findPayment(svc, caller, paymentId);
  if (p.payTo !== c.requirements.payTo)
    throw refuse('wrong_payee', `payment ${paymentId} pays another payee than paymentRequirements.payTo`);
  if (authorization !== undefined) {
    const same =
      authorization.nonce === p.nonce && signature !== undefined && collectHash(c, { authorization, signature }) === p.payloadHash;
    if (!same) throw refuse('payment_invalid', `the authorization riding along is not the one that collected payment ${paymentId}`);
  }
  return p;
}

export async function settleCapture(svc: Services, caller: Caller, c: Checked, body: Capture): Promise<SettleAnswer> {
  const p = await ownPayment(svc, caller, c, body.paymentId, body.authorization, body.signature);
  const d = body.delivery;
  if (d.signature.signer !== p.payTo) throw refuse('wrong_payee', "delivery.signature.signer is not the payment's payee (payTo)");
  const amount = captureAmount(body.amount, p);
  const fee = captureFee(body.feeBps, p);
  const contentHash = sha256Hex(await refusing(async () => canonicalPayload(d.payload)));
  if (!verifyHex(d.signature.signature, utf8(canonicalize(deliverySigningBody(p.escrowId, contentHash, d.submittedAt, amount))), p.payTo)) {
    throw refuse(
      'bad_signature',
      `delivery.signature does not verify with payTo over JCS {escrowId, contentHash, submittedAt${amount === undefined ? '' : ', amount'}}`,
    );
  }
  if (p.verdict) return capturedBy(p, d.signature.signature);
  if (p.state !== 'funded') throw refuse('payment_invalid', `payment ${p.escrowId} cannot be captured in state ${p.state}`);
  const captureDeadline = p.authorization.captureDeadline;
  if (typeof captureDeadline === 'string' && (await serviceNow(svc)).getTime() > Date.parse(captureDeadline))
    throw refuse(
      'payment_invalid',
      `payment ${p.escrowId} is past its captureDeadline (${captureDeadline}): it can only be voided, or it returns to the payer`,
    );
  try {
    await submitDelivery(svc, p.escrowId, {
      form: 'client',
      payload: d.payload,
      submittedAt: d.submittedAt,
      signature: d.signature,
      ...(amount !== undefined ? { amount } : {}),
      ...(fee !== undefined ? { fee } : {}),
    });
  } catch (err) {
    // A concurrent capture delivered first: its outcome is this one's answer.
    if (!(err instanceof AppError && err.code === 'invalid_state')) await refusing(() => Promise.reject(err));
  }
  const after = await findPayment(svc, caller, p.escrowId);
  if (!after.verdict) throw refuse('payment_invalid', `payment ${p.escrowId} cannot be captured in state ${after.state}`);
  return capturedBy(after, d.signature.signature);
}

const ATOMIC = /^[1-9]\d{0,23}$/;

/** A partial capture's amount (micro-units: atomic units at 6 decimals), at most what was authorized. */
function captureAmount(amount: string | undefined, p: Payment): bigint | undefined {
  if (amount === undefined) return undefined;
  if (!ATOMIC.test(amount))
    throw refuse(
      'malformed_header',
      'paymentPayload.payload.amount must be a whole number of atomic units greater than 0, at most 24 digits',
    );
  if (BigInt(amount) > BigInt(p.amount))
    throw refuse('payment_invalid', `paymentPayload.payload.amount ${amount} is more than the ${p.amount} atomic units authorized`);
  return BigInt(amount);
}

/**
 * The fee a capture sets on the escrow (held without one): feeBps within the bounds the payer's
 * authorization signed (default the lowest); none without bounds, where only 0 is accepted.
 */
function captureFee(feeBps: number | undefined, p: Payment): Fee | undefined {
  const a = p.authorization;
  const [min, max, recipient] = [a.minFeeBps, a.maxFeeBps, a.feeRecipient];
  if (feeBps !== undefined && (!Number.isInteger(feeBps) || feeBps < 0 || feeBps > 10_000))
    throw refuse('malformed_header', 'paymentPayload.payload.feeBps must be a whole number of basis points from 0 to 10000');
  if (typeof min !== 'number' || typeof max !== 'number') {
    if (feeBps !== undefined && feeBps !== 0)
      throw refuse('payment_invalid', `paymentPayload.payload.feeBps ${feeBps}: payment ${p.escrowId} was authorized without a fee`);
    return undefined;
  }
  const bps = feeBps ?? min;
  if (bps < min || bps > max)
    throw refuse(
      'payment_invalid',
      `paymentPayload.payload.feeBps ${bps} is outside the bounds the payer authorized (minFeeBps ${min}, maxFeeBps ${max})`,
    );
  return typeof recipient === 'string' ? { bps, recipient } : undefined;
}

const serviceNow = async (svc: Services) => (await svc.db.query<{ now: Date }>('SELECT svc_now() AS now'))[0].now;

/** The stored outcome, for the consent that produced it; another capture consent is not acted on. */
function capturedBy(p: Payment, signature: string): SettleAnswer {
  if (p.deliverySignature !== signature)
    throw refuse(
      'payment_invalid',
      `payment ${p.escrowId} was already captured with another capture consent (a capture is single use): read GET /v1/x402/facilitator/payments/${p.escrowId}`,
    );
  return captureAnswer(p);
}

export async function settleVoid(svc: Services, caller: Caller, c: Checked, body: Void): Promise<SettleAnswer> {
  const riding = body.authorization !== undefined;
  if (riding && body.payeeSignature === undefined)
    throw refuse('malformed_header', "paymentPayload.payload.payeeSignature is required when the collect's authorization rides along");
  const p = await ownPayment(svc, caller, c, body.paymentId, body.authorization, riding ? (body.signature as string) : undefined);
  const signature = payeeConsent(body, p);
  if (!verifyHex(signature, utf8(canonicalize(voidSigningBody(p.escrowId, body.signedAt))), p.payTo)) {
    throw refuse('bad_signature', 'the void\'s signature does not verify with payTo over JCS {escrowId, action: "void", signedAt}');
  }
  const skew = Math.abs(Date.parse(body.signedAt) - (await serviceNow(svc)).getTime());
  if (skew > MAX_SKEW_MS)
    throw refuse('payment_invalid', `signedAt is ${Math.round(skew / 1000)} s from the service clock; at most 300 s is accepted`);
  if (p.state === 'refunded' && p.proofId) return voidedBy(p, signature);
  const voidable = p.state === 'funded' || (p.state === 'delivered' && p.verdict?.passed === false);
  if (!voidable) throw refuse('payment_invalid', `payment ${p.escrowId} cannot be voided in state ${p.state}`);
  try {
    // The payee's void is the consent this refund rests on: escrow.refunded records it whole and
    // the bundle carries it (docs/protocol.md §11.4).
    await refundEscrow(svc, p.escrowId, { signer: p.payTo, signedAt: body.signedAt, signature });
  } catch (err) {
    // A concurrent void (or the sweep's timeout) refunded it first: answer with that proof.
    if (!(err instanceof AppError && err.code === 'invalid_state')) await refusing(() => Promise.reject(err));
  }
  const after = await findPayment(svc, caller, p.escrowId);
  if (after.state !== 'refunded' || !after.proofId)
    throw refuse('payment_invalid', `payment ${p.escrowId} cannot be voided in state ${after.state}`);
  return voidedBy(after, signature);
}

/** The void's stored outcome, for the void that refunded it; a refund by anything else is not this void's. */
function voidedBy(p: Payment, signature: string): SettleAnswer {
  if (p.voidSignature !== signature)
    throw refuse(
      'payment_invalid',
      `payment ${p.escrowId} was already refunded ${p.voidSignature ? 'by another void consent (a void is single use)' : 'without a void (a refund or its deadline)'}: read GET /v1/x402/facilitator/payments/${p.escrowId}`,
    );
  return voidAnswer(p);
}

/** The payee's signature of a void or refund: `signature`, or `payeeSignature` when the collect's authorization rides along. */
function payeeConsent(body: Void | Refund, p: Payment): string {
  const sig = body.payeeSignature ?? body.signature;
  const { signer, signature } = typeof sig === 'string' ? { signer: p.payTo, signature: sig } : sig;
  if (signer !== p.payTo) throw refuse('wrong_payee', `the ${body.type}'s signer is not the payment's payee (payTo)`);
  return signature;
}

/**
 * A refund after release (docs/x402.md "Refunds"): the REST API's refund by the payee, within the
 * refund window and what the payee was paid net. A repeat of the same consent answers the same
 * adjustment proof; each other consent is a refund of its own.
 */
export async function settleRefund(svc: Services, caller: Caller, c: Checked, body: Refund): Promise<SettleAnswer> {
  const riding = body.authorization !== undefined;
  if (riding && body.payeeSignature === undefined)
    throw refuse('malformed_header', "paymentPayload.payload.payeeSignature is required when the collect's authorization rides along");
  const p = await ownPayment(svc, caller, c, body.paymentId, body.authorization, riding ? (body.signature as string) : undefined);
  const signature = payeeConsent(body, p);
  if (!ATOMIC.test(body.amount))
    throw refuse(
      'malformed_header',
      'paymentPayload.payload.amount must be a whole number of atomic units greater than 0, at most 24 digits',
    );
  const amount = BigInt(body.amount);
  const reason = body.reason ?? '';
  if (!verifyHex(signature, utf8(canonicalize(refundSigningBody(p.escrowId, amount, reason, body.signedAt))), p.payTo))
    throw refuse(
      'bad_signature',
      'the refund\'s signature does not verify with payTo over JCS {escrowId, action: "refund", amount, reason, signedAt} (amount as the decimal)',
    );
  const refundDeadline = p.authorization.refundDeadline;
  if (typeof refundDeadline === 'string' && (await serviceNow(svc)).getTime() >= Date.parse(refundDeadline))
    throw refuse('invalid_state', `cannot refund payment ${p.escrowId}: its refundDeadline ${refundDeadline} has passed`);
  try {
    const r = await refundAfterRelease(svc, p.escrowId, {
      amount,
      reason,
      act: { form: 'client', signedAt: body.signedAt, signature: { signer: p.payTo, signature } },
    });
    return {
      success: true,
      transaction: r.proof.id,
      network: p.network,
      payer: p.payer,
      amount: amount.toString(),
      extra: { escrowId: p.escrowId, refundedTotal: (amountMicro(r.proof.refundedTotal) ?? 0n).toString() },
    };
  } catch (err) {
    // Past the deadline, over the remaining amount, or not a closing that paid the payee.
    if (err instanceof AppError && err.code === 'invalid_state') throw new Refusal('invalid_state', err.message);
    throw asRefusal(err);
  }
}
