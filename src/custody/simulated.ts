// Simulated custody rails and the sandbox fault counter (POST /v1/sandbox/custody/fail-next). The
// adapter interface lives in src/custody/types.ts; the escrow commands reach custody, never the other way.
import type { Queryable } from '../db/types.ts';
import type { CustodyAdapter } from './types.ts';

export type { Anchor, CustodyAdapter, LockRequest, LockResult, RefundRequest, SandboxFault, SettleRequest, SettleResult } from './types.ts';

/**
 * Simulated rails: always settles, unless the sandbox asked for failures with
 * POST /v1/sandbox/custody/fail-next. The counter is in the database so every instance sees it.
 */
export function createSimulatedCustody(): CustodyAdapter {
  return {
    kind: 'simulated',
    async settle(tx, req) {
      if (await takeSandboxFault(tx, req.faultPending)) return { ok: false, error: 'simulated custody failure (sandbox fail-next)' };
      return { ok: true, reference: req.reference };
    },
    // Simulated rails hold nothing outside the database: the refund is the journal entry the command writes.
    async refund(_tx, req) {
      return { ok: true, reference: req.reference };
    },
  };
}

/**
 * Spends one pending sandbox fault (POST /v1/sandbox/custody/fail-next); true when there was one. The
 * SandboxFault handed to chain custody. `pending` false: the closing's locking read (in its own
 * transaction, after its escrow lock) saw none, so there is none to take and nothing is sent. A
 * fault requested after that read is the next closing's, as if it had been requested a moment later.
 */
export async function takeSandboxFault(tx: Queryable, pending?: boolean): Promise<boolean> {
  if (pending === false) return false;
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

/** Sets the sandbox fault counter (POST /v1/sandbox/custody/fail-next; 0 clears): the next `count` settlements fail. */
export async function setSandboxFaults(q: Queryable, count: number): Promise<number> {
  const [r] = await q.query<{ fail_next: number }>('UPDATE custody_faults SET fail_next = $1 WHERE id = 1 RETURNING fail_next', [count]);
  return Number(r.fail_next);
}
