// Wire shapes an auditor handles offline: proofs, trail entries, issuer keys, signed heads, bundles.

/** Ed25519 signature by `signer` (hex64 public key) over the JCS of a signed body. */
export interface Signature {
  signer: string;
  signature: string;
}

/**
 * A settlement proof: the terminal one of a closing, or an adjustment of it (outcome
 * `refunded-after-release`, with `adjusts`). Unknown future fields are covered by the signature.
 */
export interface Proof {
  id: string;
  escrowId: string;
  outcome: 'released' | 'refunded' | 'split' | 'refunded-after-release';
  payer: string;
  payee: string;
  amount: string;
  asset: string;
  termsHash: string;
  deliveryHash?: string;
  verdictId?: string;
  disputeId?: string;
  mandateHash?: string;
  shares?: { payerBps: number; payeeBps: number };
  /** A partial capture: the amount the delivery claimed and the closing released (less the fee). */
  captured?: string;
  /** The escrow's fee and what this closing paid of it. */
  fee?: { bps: number; recipient: string; amount: string };
  /** Where a closing's money went; the three always sum to `amount`. */
  payouts?: { payee: string; payer: string; fee: string };
  /** An adjustment proof: the id of the closing proof it adjusts. */
  adjusts?: string;
  /** An adjustment proof: the refunds after release so far, this one included. */
  refundedTotal?: string;
  /** An adjustment proof: why ("" when none was given). */
  reason?: string;
  trailHead: string;
  trailLength: number;
  issuedAt: string;
  anchor?: { chain: string; contract: string; escrowRef: string; txHash: string };
  signature: Signature;
}

/** One link of an escrow's evidence trail. */
export interface TrailEntry {
  index: number;
  prevHash: string;
  hash: string;
  at: string;
  event: string;
  body: unknown;
}

/** One issuer key era; validUntil only on rotated-out keys. */
export interface IssuerKey {
  keyId: string;
  alg: 'ed25519';
  publicKey: string;
  validFrom: string;
  validUntil?: string;
  /** C2SP note verifier key under the log's origin (issuer document only): checks GET /v1/log/checkpoint. */
  vkey?: string;
}

/** A signed tree head: signature by an issuer key over JCS({logSize, rootHash, signedAt}). */
export interface SignedHead {
  logSize: number;
  rootHash: string;
  signedAt: string;
  keyId: string;
  signature: Signature;
}

/** Where a proof sits in the log: RFC 9162 §2.1.3 audit path from its leaf to the root of `logSize` leaves. */
export interface Inclusion {
  leafIndex: number;
  leafHash: string;
  logSize: number;
  rootHash: string;
  auditPath: string[];
  head: SignedHead;
}

/** RFC 9162 §2.1.4 consistency proof between two tree sizes. */
export interface ConsistencyProof {
  firstSize: number;
  secondSize: number;
  firstRoot: string;
  secondRoot: string;
  path: string[];
}

/** What a party signed that the service relied on to close the matter. */
export type PartySignatureKind =
  | 'mandate'
  | 'ap2'
  | 'x402'
  | 'delivery'
  | 'x402.void'
  | 'dispute.open'
  | 'dispute.evidence'
  | 'ruling'
  | 'refund'
  | 'refund.request';

/**
 * Kind `ap2` is the exception (the AP2 guide (ap2.md in the repository docs) §6): `signedBody` is `{paymentMandate, checkoutMandate?}`, the
 * AP2 chain whose ES256 signatures are inside it; `publicKey` is the hex RFC 7638 thumbprint of the agent key
 * that signed the closed mandate and `signature` that signature (base64url), both as the chain carries them.
 *
 * One party signature: Ed25519 by `publicKey` over JCS(`signedBody`), bound to the trail entry at
 * `trailIndex` (escrow.created for mandate and x402; delivery.submitted, escrow.refunded for
 * x402.void, dispute.opened, dispute.evidence, dispute.resolved for the others).
 */
export interface PartySignature {
  kind: PartySignatureKind;
  trailIndex: number;
  publicKey: string;
  signedBody: unknown;
  signature: string;
}

/** The parties' side of a bundle: not covered by the issuer's signature, each entry checks itself. */
export interface BundleParties {
  signatures: PartySignature[];
}

/** Everything needed to audit one matter with no network. */
export interface Bundle {
  proof: Proof;
  trail: TrailEntry[];
  inclusion: Inclusion;
  issuerKeys: IssuerKey[];
  /** Absent only in bundles from services that did not carry them yet; treated as no signatures. */
  parties?: BundleParties;
  /** The escrow's terms: sha256(JCS(terms)) is proof.termsHash; verifyBundle re-runs the verdict with them. */
  terms?: Terms;
  /** With `?disclose=payload`: the delivery's payload and the submittedAt the payee signed, to re-run every check. */
  disclosed?: { payload: unknown; submittedAt: string };
  /**
   * C2SP tlog-proof text: the proof's leaf index and inclusion path in the newest checkpoint the
   * service serves, with that checkpoint and its witness cosignatures (the service's witnessing documentation).
   */
  logProof?: string;
  /**
   * Every adjustment of the closing proof issued so far (refunds after release), in trail order, each
   * with its own log inclusion; `trail` then runs on to the last one's trailLength.
   */
  adjustments?: Array<{ proof: Proof; inclusion: Inclusion }>;
}

/** One named verification step and what it found. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface VerifyResult {
  ok: boolean;
  checks: Check[];
  /** Things the caller chose that weaken the result (verifyBundle with trustBundleKeys). */
  warnings?: string[];
  /** verifyBundle of a proof with payouts: where the money ended, after every carried adjustment. */
  payouts?: { payee: string; payer: string; fee: string };
}

/** A configured witness as GET /v1/log/witnesses shows it (the service's witnessing documentation). */
export interface WitnessState {
  name: string;
  vkey: string;
  url: string;
  cosignedSize: number | null;
  cosignedAt: string | null;
  failures: number;
  lastError: string | null;
  lastErrorAt: string | null;
}

export type PredicateName = 'non-empty' | 'equals' | 'number-range' | 'length-range';
export type HashCheck = { kind: 'hash'; expected: string };
export type MaxBytesCheck = { kind: 'maxBytes'; limit: number };
export type DeadlineCheck = { kind: 'deadline'; by: string };
export type ShapeCheck = { kind: 'shape'; requiredFields: string[] };
export type PredicateCheck = { kind: 'predicate'; name: PredicateName; params?: Record<string, unknown> };
/**
 * A metered price (the service's protocol documentation, §24.3): passes when the number at the JSON
 * Pointer `units` of the payload is a non-negative finite number and the delivery's claimed amount
 * (or the escrow's whole amount) is at most `perUnit` × units, and at most `max` when given.
 */
export type PriceCheck = { kind: 'price'; perUnit: string; units: string; max?: string };
/** One check of an escrow's terms, discriminated by `kind`. */
export type TermCheck = HashCheck | MaxBytesCheck | DeadlineCheck | ShapeCheck | PredicateCheck | PriceCheck;

/** What a delivery must satisfy: a description for people and the checks the service runs. */
export interface Terms {
  description: string;
  checks: TermCheck[];
}

/** One entry of a verdict's `results`: the check, whether it passed, and why. */
export type CheckResult = { check: TermCheck; passed: boolean; detail: string };
