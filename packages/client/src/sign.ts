// Client-side signing of the bodies the service checks: mandates, deliveries, rulings, dispute actions. Web APIs only.
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { publicKeyFromSecret, signBody } from '@escrow-settlement/protocol/keys';
import type {
  MandateCaps,
  RulingOutcome,
  Shares,
  SignedDelivery,
  SignedDisputeEvidence,
  SignedDisputeOpen,
  SignedMandate,
} from '@escrow-settlement/protocol/resources';
import type { Signature } from '@escrow-settlement/protocol/types';

/** sha256 of JCS(value): a delivery's contentHash and an evidence payload's hash. */
export function contentHash(value: unknown): string {
  return sha256Hex(canonicalize(value));
}

const nowIso = () => new Date().toISOString();

/**
 * A mandate the principal signs over JCS({principal, caps}): the body of
 * POST /v1/mandates. `principal` is the public key of `principalSecretKey`.
 */
export function signMandate(principalSecretKey: string, caps: MandateCaps): SignedMandate {
  const signature = signBody(
    principalSecretKey,
    { principal: publicKeyFromSecret(principalSecretKey, 'principalSecretKey'), caps },
    'principalSecretKey',
  );
  return { principal: signature.signer, caps, signature };
}

export interface DeliveryToSign {
  escrowId: string;
  payload: unknown;
  /** Defaults to now; the service accepts at most 300 s of skew from its clock. */
  submittedAt?: string;
  /** A partial capture: the amount claimed, an amount string (signed as the service shows it, e.g. "0.5"). */
  amount?: string;
}

/** The shortest form of an amount string, as the service shows and signs it ("1.50" → "1.5", "01" → "1"). */
function normalAmount(a: string): string {
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(a);
  if (!m) throw new TypeError('amount must be a decimal string with at most 6 fraction digits');
  const whole = BigInt(m[1]).toString();
  const frac = (m[2] ?? '').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

/**
 * The client-signed delivery form of POST /v1/escrows/{id}/delivery: the payee signs
 * JCS({escrowId, contentHash, submittedAt}) with contentHash = sha256(JCS(payload)), and `amount` in
 * it when the delivery claims one (a partial capture).
 */
export function signDelivery(payeeSecretKey: string, d: DeliveryToSign): SignedDelivery {
  const submittedAt = d.submittedAt ?? nowIso();
  const amount = d.amount === undefined ? undefined : normalAmount(d.amount);
  const signature = signBody(
    payeeSecretKey,
    { escrowId: d.escrowId, contentHash: contentHash(d.payload), submittedAt, ...(amount !== undefined ? { amount } : {}) },
    'payeeSecretKey',
  );
  return { payload: d.payload, submittedAt, signature, ...(amount !== undefined ? { amount } : {}) };
}

export interface RefundToSign {
  escrowId: string;
  /** An amount string. */
  amount: string;
  reason?: string;
  /** Defaults to now; the service accepts at most 300 s of skew from its clock. */
  signedAt?: string;
}

/**
 * A refund after release (POST /v1/escrows/{id}/refunds) by the payee or the arbiter, or with
 * `action` "refund.request" a refund request by the payer (…/refund-requests): the signer signs
 * JCS({escrowId, action, amount, reason, signedAt}), reason "" when absent.
 */
export function signRefund(
  secretKey: string,
  r: RefundToSign,
  action: 'refund' | 'refund.request' = 'refund',
): { amount: string; reason?: string; signedAt: string; signature: Signature } {
  const signedAt = r.signedAt ?? nowIso();
  const amount = normalAmount(r.amount);
  const signature = signBody(secretKey, { escrowId: r.escrowId, action, amount, reason: r.reason ?? '', signedAt });
  return { amount, ...(r.reason !== undefined ? { reason: r.reason } : {}), signedAt, signature };
}

export interface RulingToSign {
  escrowId: string;
  disputeId: string;
  outcome: RulingOutcome;
  rationale?: string;
  /** Required for a split, refused otherwise (400 bad_request naming the field). */
  shares?: Shares;
}

/**
 * One party's (or the arbiter's) signature on a ruling: JCS of {escrowId, disputeId, outcome,
 * rationale} with rationale "" when absent, plus shares for a split.
 * Put it in `signatures` of POST /v1/escrows/{id}/dispute/resolve with the same outcome, rationale and shares.
 */
export function signRuling(secretKey: string, r: RulingToSign): Signature {
  return signBody(secretKey, {
    escrowId: r.escrowId,
    disputeId: r.disputeId,
    outcome: r.outcome,
    rationale: r.rationale ?? '',
    ...(r.shares ? { shares: r.shares } : {}),
  });
}

export type DisputeActionToSign =
  | { escrowId: string; action: 'dispute.open'; reason?: string; signedAt?: string }
  | { escrowId: string; action: 'dispute.evidence'; note?: string; payload?: unknown; signedAt?: string };

/**
 * The client-signed body of POST /v1/escrows/{id}/dispute (action dispute.open) or
 * .../dispute/evidence (action dispute.evidence). The party signs JCS of {escrowId, action,
 * reason? | note?, contentHash?, signedAt}: a non-empty reason; the note when given; the payload's
 * sha256(JCS) when a payload is given.
 */
export function signDisputeAction(
  secretKey: string,
  a: { escrowId: string; action: 'dispute.open'; reason?: string; signedAt?: string },
): SignedDisputeOpen;
export function signDisputeAction(
  secretKey: string,
  a: { escrowId: string; action: 'dispute.evidence'; note?: string; payload?: unknown; signedAt?: string },
): SignedDisputeEvidence;
export function signDisputeAction(secretKey: string, a: DisputeActionToSign): SignedDisputeOpen | SignedDisputeEvidence;
export function signDisputeAction(secretKey: string, a: DisputeActionToSign): SignedDisputeOpen | SignedDisputeEvidence {
  const signedAt = a.signedAt ?? nowIso();
  if (a.action === 'dispute.open') {
    const signed = { escrowId: a.escrowId, action: a.action, ...(a.reason ? { reason: a.reason } : {}), signedAt };
    const signature = signBody(secretKey, signed);
    return { party: signature.signer, ...(a.reason !== undefined ? { reason: a.reason } : {}), signedAt, signature };
  }
  if (a.action !== 'dispute.evidence') throw new TypeError('action must be "dispute.open" or "dispute.evidence"');
  const hasPayload = a.payload !== undefined;
  const signed = {
    escrowId: a.escrowId,
    action: a.action,
    ...(a.note !== undefined ? { note: a.note } : {}),
    ...(hasPayload ? { contentHash: contentHash(a.payload) } : {}),
    signedAt,
  };
  const signature = signBody(secretKey, signed);
  return {
    party: signature.signer,
    ...(a.note !== undefined ? { note: a.note } : {}),
    ...(hasPayload ? { payload: a.payload } : {}),
    signedAt,
    signature,
  };
}
