// The auth-capture binding's wire shapes and signatures (the service's x402 documentation): what a payer
// signs to collect, what a payee signs to capture or void, and the facilitator's answers. Web APIs
// only, no dependency on @x402/core.
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { formatAmount } from '@escrow-settlement/protocol/amounts';
import { publicKeyFromSecret, signBody } from '@escrow-settlement/protocol/keys';
import { signDelivery } from '../../sign.ts';
import type { Terms } from '@escrow-settlement/protocol/resources';
import type { Signature } from '@escrow-settlement/protocol/types';

export const AUTH_CAPTURE_SCHEME = 'auth-capture';
/** The facilitator's default network (X402_NETWORK), a CAIP-2 id in the escrow namespace. */
export const ESCROW_SANDBOX = 'escrow:sandbox';
export const ESCROW_DECIMALS = 6;

export interface CollectAuthorization {
  from: string;
  to: string;
  /** Atomic units (6 decimals): the requirements' `amount`. */
  value: string;
  asset: string;
  /** paymentPayload.resource.url: the resource paid for. */
  resource: string;
  /** sha256 hex of JCS(requirements.extra.terms): the terms the payer agreed to. */
  termsHash: string;
  /** 64 hex: one payment per (payTo, nonce). */
  nonce: string;
  validBefore: string;
  /** Bound when the requirements carry them (the same fields of extra): see BoundExtra. */
  minFeeBps?: number;
  maxFeeBps?: number;
  feeRecipient?: string;
  captureDeadline?: string;
  refundDeadline?: string;
}

/**
 * The fields of the requirements' extra that a collect authorization binds when present: the fee a
 * capture may take (basis points, and who gets it) and the absolute deadlines to capture and to refund.
 */
export interface BoundExtra {
  minFeeBps?: number;
  maxFeeBps?: number;
  feeRecipient?: string;
  captureDeadline?: string;
  refundDeadline?: string;
}

export const BOUND_EXTRA_FIELDS = ['minFeeBps', 'maxFeeBps', 'feeRecipient', 'captureDeadline', 'refundDeadline'] as const;

/** The bound fields present in `extra`, as the authorization carries them. */
export function boundExtra(extra: Record<string, unknown> | undefined): BoundExtra {
  const out: Record<string, unknown> = {};
  for (const f of BOUND_EXTRA_FIELDS) if (extra?.[f] !== undefined) out[f] = extra[f];
  return out as BoundExtra;
}

export interface CollectPayload {
  authorization: CollectAuthorization;
  /** Hex Ed25519 by `from` over JCS(authorization). */
  signature: string;
}

export interface CapturePayload {
  type: 'capture';
  paymentId: string;
  delivery: { payload: unknown; submittedAt: string; signature: Signature };
  /** A partial capture: atomic units, at most the authorized amount (the rest goes back to the payer). */
  amount?: string;
  /** The fee this capture takes, within the authorization's minFeeBps..maxFeeBps (default minFeeBps). */
  feeBps?: number;
}

/** A refund after release: by payTo, of `amount` atomic units of what the payee was paid. */
export interface RefundPayload {
  type: 'refund';
  paymentId: string;
  amount: string;
  reason?: string;
  signedAt: string;
  signature: Signature;
}

export interface VoidPayload {
  type: 'void';
  paymentId: string;
  signedAt: string;
  signature: Signature;
}

/** GET <facilitator>/payments/{paymentId}: where a payment stands. */
export interface FacilitatorPaymentStatus {
  paymentId: string;
  status: 'authorized' | 'captured' | 'voided' | 'expired' | 'failed' | 'refunded' | 'partially_refunded';
  /** Atomic units (6 decimals). */
  amounts: { authorized: string; captured: string; refunded: string; fee: string };
  proofs: string[];
  captureDeadline: string | null;
  refundDeadline: string | null;
}

export interface FacilitatorRequest {
  x402Version: number;
  paymentPayload: Record<string, unknown>;
  paymentRequirements: Record<string, unknown>;
}

export interface FacilitatorSupported {
  kinds: Array<{ x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }>;
  extensions: string[];
  signers: Record<string, string[]>;
}

export interface FacilitatorVerifyResponse {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
}

export interface FacilitatorSettleResponse {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  /** collect: the escrow id; capture and void: the proof id; a refusal: "". */
  transaction: string;
  network: string;
  payer?: string;
  amount?: string;
  extra?: { escrowId?: string; state?: string; verdict?: Record<string, unknown> } & Record<string, unknown>;
}

/** sha256 hex of JCS(terms), the termsHash a collect authorization binds. */
export const termsHash = (terms: unknown): string => sha256Hex(canonicalize(terms));

export interface CollectToSign {
  to: string;
  value: string;
  asset: string;
  resource: string;
  terms: Terms | unknown;
  maxTimeoutSeconds: number;
  nonce?: string;
  validBefore?: string;
  /** The requirements' fee bounds and deadlines, bound by the authorization (pass requirements.extra's). */
  bound?: BoundExtra;
}

/** The payer's collect payload: the authorization and its signature by the payer's key. */
export function signCollect(payerSecretKey: string, c: CollectToSign): CollectPayload {
  const authorization: CollectAuthorization = {
    from: publicKeyFromSecret(payerSecretKey, 'payerSecretKey'),
    to: c.to,
    value: c.value,
    asset: c.asset,
    resource: c.resource,
    termsHash: termsHash(c.terms),
    nonce: c.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
    validBefore: c.validBefore ?? new Date(Date.now() + c.maxTimeoutSeconds * 1000).toISOString(),
    ...boundExtra(c.bound as Record<string, unknown> | undefined),
  };
  return { authorization, signature: signBody(payerSecretKey, authorization, 'payerSecretKey').signature };
}

/** Atomic units (6 decimals) as the service's decimal amount: "2500000" → "2.5". */
export const atomicToDecimal = (atomic: string): string => {
  if (!/^[1-9]\d{0,23}$/.test(atomic)) throw new TypeError(`amount must be a whole number of atomic units greater than 0, got ${atomic}`);
  return formatAmount(BigInt(atomic));
};

/**
 * The payee's capture: the response as the delivery, signed as the REST API's client-signed delivery.
 * With `amount` (atomic units) it is a partial capture: the signed body then carries the amount as
 * the decimal, JCS {escrowId, contentHash, submittedAt, amount}. `feeBps` picks the fee within the
 * payer's bounds.
 */
export function signCapture(
  payeeSecretKey: string,
  c: { escrowId: string; payload: unknown; submittedAt?: string; amount?: string; feeBps?: number },
): CapturePayload {
  const extra = { ...(c.amount !== undefined ? { amount: c.amount } : {}), ...(c.feeBps !== undefined ? { feeBps: c.feeBps } : {}) };
  if (c.amount === undefined) {
    const d = signDelivery(payeeSecretKey, { escrowId: c.escrowId, payload: c.payload, submittedAt: c.submittedAt });
    return {
      type: 'capture',
      paymentId: c.escrowId,
      delivery: { payload: d.payload, submittedAt: d.submittedAt, signature: d.signature },
      ...extra,
    };
  }
  const submittedAt = c.submittedAt ?? new Date().toISOString();
  const body = { escrowId: c.escrowId, contentHash: sha256Hex(canonicalize(c.payload)), submittedAt, amount: atomicToDecimal(c.amount) };
  const signature = signBody(payeeSecretKey, body, 'payeeSecretKey');
  return { type: 'capture', paymentId: c.escrowId, delivery: { payload: c.payload, submittedAt, signature }, ...extra };
}

/**
 * The payee's refund after release: JCS {escrowId, action: "refund", amount, reason, signedAt} with
 * the amount as the decimal and reason "" when absent; the payload carries the amount in atomic units.
 */
export function signRefund(
  payeeSecretKey: string,
  r: { escrowId: string; amount: string; reason?: string; signedAt?: string },
): RefundPayload {
  const signedAt = r.signedAt ?? new Date().toISOString();
  const body = { escrowId: r.escrowId, action: 'refund', amount: atomicToDecimal(r.amount), reason: r.reason ?? '', signedAt };
  return {
    type: 'refund',
    paymentId: r.escrowId,
    amount: r.amount,
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    signedAt,
    signature: signBody(payeeSecretKey, body, 'payeeSecretKey'),
  };
}

/** The payee's void: JCS {escrowId, action: "void", signedAt} signed with the payee key. */
export function signVoid(payeeSecretKey: string, v: { escrowId: string; signedAt?: string }): VoidPayload {
  const signedAt = v.signedAt ?? new Date().toISOString();
  return {
    type: 'void',
    paymentId: v.escrowId,
    signedAt,
    signature: signBody(payeeSecretKey, { escrowId: v.escrowId, action: 'void', signedAt }, 'payeeSecretKey'),
  };
}
