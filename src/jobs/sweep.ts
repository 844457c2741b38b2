// The deadline sweep: closes every stage left past its deadline (silence always resolves),
// on every instance, side by side (CONTRACT §3 Sweep, DESIGN: jobs/).
import type { Services } from '../services.ts';
import type { Queryable } from '../db/types.ts';
import { lockEscrow, type Locked } from '../domain/escrowRow.ts';
import { transition } from '../domain/states.ts';
import { closeMatter, type Closing, type Ruling } from '../domain/close.ts';

export interface SweepResult {
  /** Always true since passes no longer take a sweep lock (kept for callers that count passes). */
  ran: boolean;
  closed: number;
  failed: number;
  errors: number;
}

const STAGE = { funded: 'deliver', delivered: 'resolve', disputed: 'decide' } as const;

function timeoutClosing(e: Locked): Closing {
  const stage = STAGE[e.state as keyof typeof STAGE];
  if (stage !== 'decide') return { kind: 'timeout', stage };
  const outcome = e.timeouts.timeoutRuling;
  const ruling: Ruling = {
    outcome,
    rationale: 'the decide deadline passed without a ruling',
    decidedAt: e.now.toISOString(),
    decidedBy: 'timeout',
    ...(outcome === 'split' ? { shares: { payerBps: 5000, payeeBps: 5000 } } : {}),
  };
  return { kind: 'timeout', stage, disputeId: e.disputeId!, ruling };
}

/** Closes one expired escrow inside the sweep's transaction; false if it no longer needs it. */
async function closeExpired(tx: Queryable, svc: Services, id: string): Promise<'closed' | 'failed' | 'skipped'> {
  const e = await lockEscrow(tx, id);
  // Re-checked under the row lock: another instance (or a user) may have moved it since we listed it.
  if (!e.deadlineAt || e.deadlineAt.getTime() > e.now.getTime()) return 'skipped';
  try {
    transition('timeout', e);
  } catch {
    return 'skipped';
  }
  const r = await closeMatter(tx, svc, { e, closing: timeoutClosing(e) });
  return r.ok ? 'closed' : 'failed';
}

/**
 * One sweep pass of at most `batch` due escrows, in one transaction. Each escrow closes inside its
 * own savepoint (Tx.savepoint), so a fault in one, a JS error or a
 * database error, leaves it exactly as it was and the others of the pass still close.
 */
export const SWEEP_BATCH = 25;

export async function sweepOnce(svc: Services, opts: { batch?: number; onError?: (id: string, err: unknown) => void } = {}): Promise<SweepResult> {
  // No lock of the sweep's own and none of the log's: closings only sequence their leaves (the
  // integrator indexes them after the commit), so passes on several instances run side by side on
  // disjoint escrows, and a user's command waits at most for the one escrow it shares with a pass.
  const batch = opts.batch ?? SWEEP_BATCH;
  return svc.db.tx(async (tx) => {
    // Lock: every escrow of the batch is row-locked here, before any closing touches custody or the
    // fault row; escrows a command (or another instance's pass) holds are skipped until the next
    // pass. Locking them one by one mid-batch deadlocked against commands holding one escrow.
    const due = await tx.query<{ id: string }>(
      'SELECT id FROM escrows WHERE deadline_at <= svc_now() ORDER BY deadline_at, id LIMIT $1 FOR UPDATE SKIP LOCKED',
      [batch],
    );
    const result: SweepResult = { ran: true, closed: 0, failed: 0, errors: 0 };
    for (const { id } of due) {
      try {
        const r = await tx.savepoint((sp) => closeExpired(sp, svc, id));
        if (r === 'closed') result.closed++;
        if (r === 'failed') result.failed++;
      } catch (err) {
        result.errors++;
        opts.onError?.(id, err);
      }
    }
    return result;
  });
}
