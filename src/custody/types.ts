// Custody adapters: where funding locks and a closing actually moves value (simulated rails in
// src/custody/simulated.ts, or the chain adapter here). The journal lives in SQL; an adapter only locks,
// settles or fails.
import type { Queryable } from '../db/types.ts';
import type { Proof } from '@escrow-settlement/protocol/types';

/** Where a chain-backed settlement happened (docs/protocol.md §21, the proof's `anchor`); it goes into the signed proof body. */
export type Anchor = NonNullable<Proof['anchor']>;

/** What funding asks custody to hold: the whole amount, for the payer and payee (Ed25519 public keys, hex). */
export interface LockRequest {
  escrowId: string;
  reference: string;
  amount: bigint;
  asset: string;
  payer: string;
  payee: string;
}

export type LockResult = { ok: true } | { ok: false; error: string };

export interface SettleRequest {
  escrowId: string;
  /** Stable per escrow: a retry reuses it, so custody can refuse a second payout. */
  reference: string;
  outcome: 'released' | 'refunded' | 'split';
  payerAmount: bigint;
  payeeAmount: bigint;
  /** The fee leg (docs/protocol.md §24.1): present only when a fee is paid, to `feeRecipient` (hex64). */
  feeAmount?: bigint;
  feeRecipient?: string;
  asset: string;
  /**
   * Whether a sandbox fault was pending when the closing read its locked escrow (the same statement,
   * src/escrow/escrowRow.ts). false: none is taken and the fault counter is not asked (no round trip);
   * absent: it is asked.
   */
  faultPending?: boolean;
}

export interface RefundRequest {
  escrowId: string;
  /** The refund's id: stable, so custody can refuse a second payout of it. */
  reference: string;
  amount: bigint;
  asset: string;
  from: string;
  to: string;
}

export type SettleResult = { ok: true; reference: string; anchor?: Anchor } | { ok: false; error: string };

export interface CustodyAdapter {
  readonly kind: string;
  /**
   * Called by funding inside its transaction; a failure refuses the funding (502 custody_failed,
   * the escrow stays created). Absent: nothing to lock (simulated rails).
   */
  lock?(tx: Queryable, req: LockRequest): Promise<LockResult>;
  /** Called inside the closing transaction with its connection (sandbox fault counter lives there). */
  settle(tx: Queryable, req: SettleRequest): Promise<SettleResult>;
  /**
   * A refund after release (docs/protocol.md §24.4): moves `amount` from the payee back to the payer,
   * inside the refund's transaction. Absent: this custody cannot, and such refunds are refused.
   */
  refund?(tx: Queryable, req: RefundRequest): Promise<SettleResult>;
}

/**
 * Spends one pending sandbox fault (POST /v1/sandbox/custody/fail-next) in the caller's transaction;
 * true when there was one. The simulated rails own the counter (src/custody/simulated.ts takeSandboxFault); an
 * adapter that honours it is handed this function, so custody/ imports nothing from the domain.
 */
export type SandboxFault = (tx: Queryable, pending?: boolean) => Promise<boolean>;
