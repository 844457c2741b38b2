// Wire shapes of the API's resources and request bodies, as the service sends and takes them.
import type { CheckResult, Proof, Signature, Terms } from './types.ts';
import type { EngineEvent } from './webhook.ts';

/** A party to an escrow: a raw Ed25519 public key and an optional label. */
export interface KeyRef {
  publicKey: string;
  label?: string;
}

/** A sandbox agent: the service holds its secret key; only the public key is returned. */
export interface Agent {
  id: string;
  label: string;
  publicKey: string;
}

export interface MandateCaps {
  agent: string;
  perEscrowMax: string;
  cumulativeMax: string;
  allowedAssets: string[];
  allowedCounterparties?: string[];
  expiresAt: string;
}

/** What POST /v1/mandates takes; signMandate builds it. */
export interface SignedMandate {
  principal: string;
  caps: MandateCaps;
  signature: Signature;
}

export interface Mandate extends SignedMandate {
  id: string;
  hash: string;
  usage?: { spent: string; remaining: string };
}

// The terms are carried by bundles too (an auditor replays the verdict offline), so they live with the
// offline shapes in types.ts; they are named here as well, where the API's resources use them.
export type {
  CheckResult,
  DeadlineCheck,
  HashCheck,
  MaxBytesCheck,
  PredicateCheck,
  PredicateName,
  PriceCheck,
  ShapeCheck,
  TermCheck,
  Terms,
} from './types.ts';

export type RulingOutcome = 'release' | 'refund' | 'split';

export interface EscrowTimeouts {
  deliverWithinSeconds?: number;
  resolveWithinSeconds?: number;
  decideWithinSeconds?: number;
  timeoutRuling?: RulingOutcome;
  /** Refunds after release are accepted this long after the closing (default 2592000 = 30 days; 0: none). */
  refundWithinSeconds?: number;
}

/** An escrow's fee: `bps` (0..10000) of the payee's share of every closing that pays the payee, to `recipient`. */
export interface Fee {
  bps: number;
  recipient: string;
}

/** A refund after release (POST /v1/escrows/{id}/refunds), or a refund request (…/refund-requests). */
export interface Refund {
  id: string;
  amount: string;
  reason: string;
  /** The signer: the payee or the arbiter (the payer for a request). */
  by: string;
  at: string;
}

/** The body of POST /v1/escrows/{id}/refunds or …/refund-requests: client-signed (from signRefund / signRefundRequest) or sandbox. */
export type RefundInput =
  | { amount: string; reason?: string; signedAt: string; signature: Signature }
  | { amount: string; reason?: string; agentIds: [string] };

export type EscrowState = 'created' | 'funded' | 'delivered' | 'settled' | 'disputed' | 'resolved' | 'refunded';

export interface Escrow {
  id: string;
  state: EscrowState;
  payer: KeyRef;
  payee: KeyRef;
  arbiter?: KeyRef;
  amount: string;
  asset: string;
  terms: Terms;
  timeouts: Required<EscrowTimeouts>;
  deadlineAt?: string;
  mandateId?: string;
  mandateHash?: string;
  custody: { status: 'unfunded' | 'locked' | 'settle-failed' | 'settled' };
  createdAt: string;
  updatedAt: string;
  /** Your notes, set at creation; absent when none. Never part of a proof. */
  metadata?: Record<string, string>;
  fee?: Fee;
  /** Once a closing paid the payee with a refund window: until when refunds after release are accepted. */
  refundDeadline?: string;
  refundedTotal?: string;
  /** GET /v1/escrows/{id} only, once the window opened. */
  refunds?: Refund[];
}

/** POST /v1/escrows: each party is a KeyRef or a sandbox agent id. */
export interface CreateEscrowInput {
  amount: string;
  asset: string;
  terms: Terms;
  payer?: KeyRef;
  payerAgentId?: string;
  payee?: KeyRef;
  payeeAgentId?: string;
  arbiter?: KeyRef;
  arbiterAgentId?: string;
  mandateId?: string;
  /** An AP2 v0.2 Payment Mandate chain (open~…~~closed~…~) as the escrow's authority, instead of a mandateId. */
  ap2?: Ap2Authority;
  timeouts?: EscrowTimeouts;
  fee?: Fee;
  /** At most 50 keys, keys of 1-40 characters, string values of at most 500 characters. */
  metadata?: Record<string, string>;
}

/** The `ap2` member of POST /v1/escrows: the chain, and the open Checkout Mandate its payment.reference names. */
export interface Ap2Authority {
  paymentMandate: string;
  checkoutMandate?: string;
}

/** POST /v1/ap2/challenge: the nonce and audience the closed mandate must carry. */
export interface Ap2Challenge {
  nonce: string;
  audience: string;
  expiresAt: string;
}

export interface EscrowPage {
  escrows: Escrow[];
  nextCursor: string | null;
}

/** Every list route pages alike: with `limit` the answer carries nextCursor (null on the last page). */
export type PageQuery = {
  limit?: number;
  cursor?: string;
};

/**
 * GET /v1/escrows filters: party agent (payer or payee) and strict createdAt bounds (ISO 8601);
 * `order` newest lists newest first (default oldest: creation order).
 */
export type EscrowListQuery = PageQuery & {
  state?: EscrowState;
  agentId?: string;
  createdAfter?: string;
  createdBefore?: string;
  order?: 'oldest' | 'newest';
};

/** Sandbox delivery: the service signs with the held payee agent's key. */
export interface SandboxDelivery {
  agentId: string;
  payload: unknown;
  /** A partial capture: the amount claimed (at most the escrow's); absent: all of it. */
  amount?: string;
}

/** Client-signed delivery: what signDelivery returns. */
export interface SignedDelivery {
  payload: unknown;
  submittedAt: string;
  signature: Signature;
  /** A partial capture, signed into the body. */
  amount?: string;
}

export interface Delivery {
  id: string;
  escrowId: string;
  contentHash: string;
  payload: unknown;
  submittedAt: string;
  signature: Signature;
}

export interface Verdict {
  id: string;
  escrowId: string;
  deliveryId: string;
  passed: boolean;
  results: CheckResult[];
  decidedAt: string;
}

/** `proof` is present when the verdict passed and custody confirmed. */
export interface DeliveryResult {
  delivery: Delivery;
  verdict: Verdict;
  proof?: Proof;
}

export interface Shares {
  payerBps: number;
  payeeBps: number;
}

export interface Dispute {
  id: string;
  escrowId: string;
  state: 'open' | 'under-review' | 'resolved';
  openedBy: string;
  reason: string;
  evidence: Array<{ party: string; contentHash: string; note: string; submittedAt: string }>;
  ruling?: {
    outcome: RulingOutcome;
    rationale: string;
    decidedAt: string;
    decidedBy: 'co-signature' | 'arbiter' | 'timeout';
    shares?: Shares;
  };
  openedAt: string;
}

/** Client-signed dispute bodies: what signDisputeAction returns. */
export interface SignedDisputeOpen {
  party: string;
  reason?: string;
  signedAt: string;
  signature: Signature;
}

export interface SignedDisputeEvidence {
  party: string;
  note?: string;
  payload?: unknown;
  signedAt: string;
  signature: Signature;
}

export type OpenDisputeInput = { agentId: string; reason?: string } | SignedDisputeOpen;
export type EvidenceInput = { agentId: string; note?: string; payload?: unknown } | SignedDisputeEvidence;

export interface ResolveInput {
  outcome: RulingOutcome;
  rationale?: string;
  signatures?: Signature[];
  agentIds?: string[];
  shares?: Shares;
}

export interface CustodyEntry {
  escrowId: string;
  status: 'pending' | 'settle-failed' | 'confirmed';
  outcome: string;
  payerAmount: string;
  payeeAmount: string;
  attempts: number;
  lastError?: string;
  /** The fee leg, when a fee was paid. */
  feeAmount?: string;
  feeRecipient?: string;
  /** Each refund after release: a leg from the payee back to the payer. */
  refunds: Array<{ id: string; amount: string; from: 'payee'; to: 'payer'; at: string }>;
  reference: string;
  createdAt: string;
  updatedAt: string;
}

export interface ProofVerification {
  proofId: string;
  signatureValid: boolean;
  trailIntact: boolean;
  trailHeadMatches: boolean;
  issuer: string;
}

/** POST /v1/verify. */
export interface DocumentVerification {
  valid: boolean;
  signatureValid: boolean;
  issuerKnown: boolean;
  issuer: string;
  keyId?: string;
  validFrom?: string;
  validUntil?: string;
  issuedWithinEra?: boolean;
  anchor?: Proof['anchor'];
}

export interface Health {
  ok: boolean;
  service: string;
  issuer: string | null;
  version: string;
  uptimeSeconds: number;
}

export interface DeadLetter {
  id: string;
  url: string;
  event: EngineEvent;
  attempts: number;
  lastError: string;
  lastStatus?: number;
  firstAttemptAt: string;
  deadAt: string;
}

/** A registered webhook URL as GET /v1/webhooks lists it in `endpoints`. */
export interface WebhookEndpoint {
  url: string;
  /** Disabled after failing every attempt for the deployment's WEBHOOK_DISABLE_AFTER_HOURS, until enabled again. */
  disabled: boolean;
  disabledAt?: string;
  disabledReason?: string;
  /** When its current run of failed attempts began; absent while its last attempt succeeded. */
  failingSince?: string;
}

/** One webhook POST as the sender recorded it (GET /v1/webhooks/attempts). */
export interface WebhookAttempt {
  id: string;
  escrowId: string;
  /** The trail index of the event (its webhook-id is `${escrowId}_${index}`). */
  index: number;
  event: string;
  url: string;
  attempt: number;
  status?: number;
  error?: string;
  durationMs: number;
  outcome: 'delivered' | 'retry' | 'dead';
  at: string;
}

export interface ApiKeyRecord {
  id: string;
  label: string;
  createdAt: string;
  revokedAt?: string;
  rateLimitMax?: number;
}

export interface MintedKey extends ApiKeyRecord {
  secret: string;
}

export interface RateSnapshot {
  windowMs: number;
  windowStartedAt: string;
  units: Record<string, number>;
}
