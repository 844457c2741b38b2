// The deadline sweep: closes every stage left past its deadline (silence always resolves),
// on every instance, one instance at a time (CONTRACT §3 Sweep, DESIGN: jobs/).
import type { Services } from '../services.ts';
import type { Queryable } from '../db/types.ts';
import { lockEscrow, type Locked } from '../domain/escrowRow.ts';
import { transition } from '../domain/states.ts';
import { closeMatter, type Closing, type Ruling } from '../domain/close.ts';

export interface SweepResult {
  /** false when another instance held the sweep lock. */
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
 * One sweep pass of at most `batch` escrows, in one transaction under a transaction-scoped
 * advisory lock. Each escrow closes inside its own savepoint, so a fault in one leaves it exactly
 * as it was (nothing half-closed) and the others still close.
 */
export const SWEEP_BATCH = 10;

export async function sweepOnce(svc: Services, opts: { batch?: number; onError?: (id: string, err: unknown) => void } = {}): Promise<SweepResult> {
  // Small passes: a pass holds the log's sequencer row from its first close to its commit, so a
  // 100-escrow pass held users' deliveries for ~0.5 s (bench run 4); 10 keeps that wait short.
  const batch = opts.batch ?? SWEEP_BATCH;
  return svc.db.tx(async (tx) => {
    // Lock: pg_try_advisory_xact_lock on a key per schema — one sweeper at a time per database
    // schema; the other instances skip this pass instead of waiting. Released at commit.
    const [{ locked }] = await tx.query<{ locked: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':escrow-sweep')) AS locked`);
    if (!locked) return { ran: false, closed: 0, failed: 0, errors: 0 };
    // Lock: every escrow of the batch is row-locked here, before any closing takes the log's
    // sequencer row (log_state) or the custody fault row; escrows a command holds are skipped until
    // the next pass. Locking them one by one mid-batch deadlocked: the sweep held log_state and
    // waited for an escrow whose command held that escrow and waited for log_state.
    const due = await tx.query<{ id: string }>(
      'SELECT id FROM escrows WHERE deadline_at <= svc_now() ORDER BY deadline_at, id LIMIT $1 FOR UPDATE SKIP LOCKED',
      [batch],
    );
    const result: SweepResult = { ran: true, closed: 0, failed: 0, errors: 0 };
    for (const { id } of due) {
      await tx.query('SAVEPOINT sweep_one');
      try {
        const r = await closeExpired(tx, svc, id);
        await tx.query('RELEASE SAVEPOINT sweep_one');
        if (r === 'closed') result.closed++;
        if (r === 'failed') result.failed++;
      } catch (err) {
        await tx.query('ROLLBACK TO SAVEPOINT sweep_one');
        result.errors++;
        opts.onError?.(id, err);
      }
    }
    return result;
  });
}
