// The checks every facilitator call makes before it looks at the payload's kind: the x402 version,
// the auth-capture requirements (scheme, network, flow, asset, amount, terms) and that the payer
// accepted exactly these requirements (docs/x402.md "Requirements").
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { hashJson } from '@escrow-settlement/protocol/crypto/hash';
import { AppError } from '../../errors.ts';
import { validateTerms, type Terms } from '../../terms/checks.ts';
import { DEFAULT_TIMEOUTS } from '../../escrow/escrows.ts';
import type { Timeouts } from '../../escrow/escrowRow.ts';
import { MAX_STAGE_SECONDS } from '../../validate.ts';
import { ASSETS, PAYMENT_FLOW, PaymentPayloadS, RequirementsS, SCHEME, shape, type Requirements } from './wire.ts';
import { refuse } from './refusal.ts';

export interface Checked {
  requirements: Requirements;
  /** The escrow amount in micro-units: atomic units with 6 decimals are exactly the service's micro-units. */
  amount: bigint;
  terms: Terms;
  termsHash: string;
  /**
   * The escrow's timeouts. With `extra.captureDeadline` its deliverWithinSeconds is only known
   * against the service clock at collect: escrowTimeouts() sets it.
   */
  timeouts: Timeouts;
  /** extra.minFeeBps / maxFeeBps / feeRecipient, checked: the bounds of the fee a capture may take. */
  fee?: { minBps: number; maxBps: number; recipient?: string };
  captureDeadline?: string;
  refundDeadline?: string;
  /** paymentPayload.resource.url, when the payer sent it. */
  resourceUrl?: string;
  payload: Record<string, unknown>;
}

const ATOMIC = /^[1-9]\d{0,23}$/;
/** The service's amounts have at most 18 integer digits (docs/protocol.md §2.3): 24 atomic digits at 6 decimals. */
const MAX_ATOMIC = 10n ** 24n - 1n;

export function checkRequest(
  body: { x402Version: number; paymentPayload: Record<string, unknown>; paymentRequirements: Record<string, unknown> },
  network: string,
): Checked {
  if (body.x402Version !== 2)
    throw refuse('version_mismatch', `x402Version must be 2 (this facilitator speaks x402 v2), got ${body.x402Version}`);
  const payment = shape(body.paymentPayload, PaymentPayloadS, 'paymentPayload');
  if (payment.x402Version !== 2) throw refuse('version_mismatch', `paymentPayload.x402Version must be 2, got ${payment.x402Version}`);
  const r = shape(body.paymentRequirements, RequirementsS, 'paymentRequirements');
  if (r.scheme !== SCHEME)
    throw refuse('scheme_mismatch', `paymentRequirements.scheme must be ${SCHEME}, got ${JSON.stringify(r.scheme).slice(0, 80)}`);
  if (r.network !== network)
    throw refuse('scheme_mismatch', `paymentRequirements.network must be ${network}, got ${JSON.stringify(r.network).slice(0, 80)}`);
  if (r.extra.paymentFlow !== PAYMENT_FLOW)
    throw refuse(
      'scheme_mismatch',
      `paymentRequirements.extra.paymentFlow must be ${PAYMENT_FLOW}, got ${JSON.stringify(r.extra.paymentFlow).slice(0, 80)}`,
    );
  if (!(ASSETS as readonly string[]).includes(r.asset))
    throw refuse(
      'wrong_asset',
      `paymentRequirements.asset must be one of ${ASSETS.join(', ')}, got ${JSON.stringify(r.asset).slice(0, 80)}`,
    );
  if (!ATOMIC.test(r.amount) || BigInt(r.amount) > MAX_ATOMIC)
    throw refuse(
      'malformed_header',
      'paymentRequirements.amount must be a whole number of atomic units (6 decimals) greater than 0, at most 24 digits',
    );
  if (!Number.isInteger(r.maxTimeoutSeconds) || r.maxTimeoutSeconds < 1 || r.maxTimeoutSeconds > MAX_STAGE_SECONDS) {
    throw refuse('malformed_header', `paymentRequirements.maxTimeoutSeconds must be a whole number from 1 to ${MAX_STAGE_SECONDS}`);
  }
  let terms: Terms;
  try {
    terms = validateTerms(r.extra.terms, 'paymentRequirements.extra.terms');
  } catch (err) {
    if (err instanceof AppError) throw refuse('malformed_header', err.message);
    throw err;
  }
  // The payer signed `accepted`; settling other requirements would settle something it never saw.
  const accepted = payment.accepted;
  if (accepted.scheme !== r.scheme || accepted.network !== r.network)
    throw refuse('scheme_mismatch', 'paymentPayload.accepted names another scheme or network than paymentRequirements');
  if (accepted.payTo !== r.payTo) throw refuse('wrong_payee', 'paymentPayload.accepted.payTo differs from paymentRequirements.payTo');
  if (accepted.asset !== r.asset) throw refuse('wrong_asset', 'paymentPayload.accepted.asset differs from paymentRequirements.asset');
  // A partial capture may come with the requirements' amount lowered to it (@x402/core's settlement
  // override): the payer signed the accepted amount, which stays the payment's.
  const partial =
    payment.payload.type === 'capture' &&
    typeof payment.payload.amount === 'string' &&
    payment.payload.amount === r.amount &&
    typeof accepted.amount === 'string' &&
    ATOMIC.test(accepted.amount) &&
    BigInt(accepted.amount) > BigInt(r.amount);
  if (partial) r.amount = accepted.amount as string;
  if (!sameJson(accepted, partial ? { ...body.paymentRequirements, amount: accepted.amount } : body.paymentRequirements))
    throw refuse('payment_invalid', 'paymentPayload.accepted differs from paymentRequirements (amount, maxTimeoutSeconds or extra)');
  const fee = feeBounds(r.extra);
  const { captureDeadline, refundDeadline } = r.extra;
  if (captureDeadline !== undefined && r.extra.timeouts?.deliverWithinSeconds !== undefined)
    throw refuse(
      'malformed_header',
      'paymentRequirements.extra.captureDeadline replaces extra.timeouts.deliverWithinSeconds (the capture deadline is the delivery deadline): give one of them',
    );
  if (refundDeadline !== undefined && r.extra.timeouts?.refundWithinSeconds !== undefined)
    throw refuse(
      'malformed_header',
      'paymentRequirements.extra.refundDeadline replaces extra.timeouts.refundWithinSeconds (the refund window ends at the deadline): give one of them',
    );
  if (captureDeadline !== undefined && refundDeadline !== undefined && Date.parse(refundDeadline) <= Date.parse(captureDeadline))
    throw refuse(
      'malformed_header',
      `paymentRequirements.extra.refundDeadline (${refundDeadline}) must be after extra.captureDeadline (${captureDeadline})`,
    );
  // Without given timeouts the resource server has maxTimeoutSeconds to capture, as x402's authorization window.
  const timeouts: Timeouts = { ...DEFAULT_TIMEOUTS, deliverWithinSeconds: r.maxTimeoutSeconds, ...(r.extra.timeouts ?? {}) };
  return {
    requirements: r,
    amount: BigInt(r.amount),
    terms,
    termsHash: hashJson(terms),
    timeouts,
    ...(fee ? { fee } : {}),
    ...(captureDeadline !== undefined ? { captureDeadline } : {}),
    ...(refundDeadline !== undefined ? { refundDeadline } : {}),
    resourceUrl: payment.resource?.url,
    payload: payment.payload,
  };
}

const BPS_MAX = 10_000;

/** extra.minFeeBps, maxFeeBps and feeRecipient: given together, whole basis points, min ≤ max. */
function feeBounds(extra: Requirements['extra']): Checked['fee'] {
  const { minFeeBps, maxFeeBps, feeRecipient } = extra;
  if (minFeeBps === undefined && maxFeeBps === undefined) {
    if (feeRecipient !== undefined)
      throw refuse('malformed_header', 'paymentRequirements.extra.feeRecipient needs extra.minFeeBps and extra.maxFeeBps');
    return undefined;
  }
  for (const [name, v] of [
    ['minFeeBps', minFeeBps],
    ['maxFeeBps', maxFeeBps],
  ] as const) {
    if (v === undefined)
      throw refuse(
        'malformed_header',
        `paymentRequirements.extra.${name} is required with the other fee bound: give minFeeBps and maxFeeBps`,
      );
    if (!Number.isInteger(v) || v < 0 || v > BPS_MAX)
      throw refuse('malformed_header', `paymentRequirements.extra.${name} must be a whole number of basis points from 0 to ${BPS_MAX}`);
  }
  const [min, max] = [minFeeBps as number, maxFeeBps as number];
  if (min > max) throw refuse('malformed_header', `paymentRequirements.extra.minFeeBps (${min}) must not exceed extra.maxFeeBps (${max})`);
  if (max > 0 && feeRecipient === undefined)
    throw refuse(
      'malformed_header',
      'paymentRequirements.extra.feeRecipient is required when extra.maxFeeBps is above 0: the fee goes to it',
    );
  return { minBps: min, maxBps: max, ...(feeRecipient !== undefined ? { recipient: feeRecipient } : {}) };
}

/**
 * The escrow's timeouts at collect time `now` (docs/x402.md "Fees and deadlines"): an absolute
 * captureDeadline must be in the future, at most ten years away, and becomes the delivery stage's
 * length, rounded up to the second (the facilitator refuses captures after the deadline itself); a
 * refundDeadline must come after the capture deadline, given or implied.
 */
export function escrowTimeouts(c: Checked, now: Date): Timeouts {
  let deliverWithinSeconds = c.timeouts.deliverWithinSeconds;
  if (c.captureDeadline !== undefined) {
    const ms = Date.parse(c.captureDeadline) - now.getTime();
    if (ms <= 0) throw refuse('payment_invalid', `paymentRequirements.extra.captureDeadline (${c.captureDeadline}) has passed`);
    deliverWithinSeconds = Math.ceil(ms / 1000);
    if (deliverWithinSeconds > MAX_STAGE_SECONDS)
      throw refuse('malformed_header', `paymentRequirements.extra.captureDeadline is more than ${MAX_STAGE_SECONDS} s away`);
  }
  if (c.refundDeadline !== undefined) {
    const captureBy = now.getTime() + deliverWithinSeconds * 1000;
    if (Date.parse(c.refundDeadline) <= now.getTime())
      throw refuse('payment_invalid', `paymentRequirements.extra.refundDeadline (${c.refundDeadline}) has passed`);
    if (c.captureDeadline === undefined && Date.parse(c.refundDeadline) <= captureBy)
      throw refuse(
        'malformed_header',
        `paymentRequirements.extra.refundDeadline (${c.refundDeadline}) must be after the capture deadline (${new Date(captureBy).toISOString()}, the delivery deadline its timeouts imply)`,
      );
  }
  // The escrow's own window runs from its closing; starting it at collect, rounded up, lets it
  // end no earlier than refundDeadline, which the facilitator enforces itself (docs/x402.md).
  const refundWithinSeconds =
    c.refundDeadline === undefined ? c.timeouts.refundWithinSeconds : Math.ceil((Date.parse(c.refundDeadline) - now.getTime()) / 1000);
  if (refundWithinSeconds !== undefined && refundWithinSeconds > MAX_STAGE_SECONDS)
    throw refuse('malformed_header', `paymentRequirements.extra.refundDeadline is more than ${MAX_STAGE_SECONDS} s away`);
  return { ...c.timeouts, deliverWithinSeconds, ...(refundWithinSeconds !== undefined ? { refundWithinSeconds } : {}) };
}

function sameJson(a: unknown, b: unknown): boolean {
  try {
    return canonicalize(a) === canonicalize(b);
  } catch {
    return false;
  }
}
