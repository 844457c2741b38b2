// Custody adapters: where a closing actually moves (simulated) value. The journal lives in SQL;
// the adapter only settles or fails.
import type { Queryable } from '../db/types.ts';

export interface SettleRequest {
  escrowId: string;
  /** Stable per escrow: a retry reuses it, so custody can refuse a second payout. */
  reference: string;
  outcome: 'released' | 'refunded' | 'split';
  payerAmount: bigint;
  payeeAmount: bigint;
  asset: string;
}

export type SettleResult = { ok: true; reference: string } | { ok: false; error: string };

export interface CustodyAdapter {
  readonly kind: string;
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
      // Takes the row lock only while faults are pending (fail_next > 0); otherwise the
      // predicate is false, nothing is locked, and closings never contend here.
      const failed = await tx.query('UPDATE custody_faults SET fail_next = fail_next - 1 WHERE id = 1 AND fail_next > 0 RETURNING fail_next');
      if (failed.length > 0) return { ok: false, error: 'simulated custody failure (sandbox fail-next)' };
      return { ok: true, reference: req.reference };
    },
  };
}
