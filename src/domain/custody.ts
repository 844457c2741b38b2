// Custody adapters: where funding locks and a closing actually moves value (simulated rails, or
// the chain adapter in src/custody/). The journal lives in SQL; the adapter only locks, settles or fails.
import type { Queryable } from '../db/types.ts';
import type { Proof } from '@escrow-settlement/client/types';

/** Where a chain-backed settlement happened (SPEC part 2, Proof `anchor`); it goes into the signed proof body. */
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
  asset: string;
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
}

/**
 * Simulated rails: always settles, unless the sandbox asked for failures with
 * POST /v1/sandbox/custody/fail-next. The counter is in the database so every instance sees it.
 */
export function createSimulatedCustody(): CustodyAdapter {
  return {
    kind: 'simulated',
    async settle(tx, req) {
      if (await takeSandboxFault(tx)) return { ok: false, error: 'simulated custody failure (sandbox fail-next)' };
      return { ok: true, reference: req.reference };
    },
  };
}

/** Spends one pending sandbox fault (POST /v1/sandbox/custody/fail-next); true when there was one. */
export async function takeSandboxFault(tx: Queryable): Promise<boolean> {
  // Takes the row lock only while faults are pending (fail_next > 0), and never waits for it: a
  // closing that waited behind another's fault, then found none left, kept the row locked
  // (EvalPlanQual) while it appended to the log, and deadlocked with a sweep pass that held the log
  // row and checked for a fault. SKIP LOCKED: a fault another closing is taking is not this one's.
  const failed = await tx.query(
    `UPDATE custody_faults SET fail_next = fail_next - 1
      WHERE id = (SELECT id FROM custody_faults WHERE id = 1 AND fail_next > 0 FOR UPDATE SKIP LOCKED)
      RETURNING fail_next`,
  );
  return failed.length > 0;
}
