// The deadline sweep: closes every stage left past its deadline (silence always resolves),
// on every instance, side by side (docs/protocol.md §7; docs/design.md §5).
import type { Services } from '../services.ts';
import type { Queryable } from '../db/types.ts';
import { readLocked, type Locked } from '../escrow/escrowRow.ts';
import { transition } from '../escrow/states.ts';
import { closeMatter, presignClosing, type Closing, type Ruling, type Signed } from '../escrow/close.ts';

export interface SweepResult {
  /** False when the pass did not run: the log may not grow now (src/tlog/gate.ts). */
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

/** Whether a locked escrow is due for a timeout closing (its deadline passed, its state allows one). */
function isDue(e: Locked): boolean {
  if (!e.deadlineAt || e.deadlineAt.getTime() > e.now.getTime()) return false;
  try {
    transition('timeout', e);
    return true;
  } catch {
    return false;
  }
}

/** A due escrow of the pass, with its proof once signed ahead. */
interface Due {
  e: Locked;
  closing: Closing;
  signed?: Signed;
}

/** Closes one expired escrow inside the sweep's transaction; `next` is signed while its statements travel. */
async function closeExpired(tx: Queryable, svc: Services, d: Due, next: Due | undefined): Promise<'closed' | 'failed'> {
  const r = await closeMatter(tx, svc, {
    e: d.e,
    closing: d.closing,
    signed: d.signed,
    // The next closing's signature (its largest CPU cost) overlaps this one's round trip.
    // If that fails, the next closing signs for itself (and meets the error itself); never this one's.
    ...(next
      ? {
          whileWriting: async () => {
            next.signed = await presignClosing(tx, svc, next.e, next.closing).catch(() => undefined);
          },
        }
      : {}),
  });
  return r.ok ? 'closed' : 'failed';
}

/**
 * One sweep pass of at most `batch` due escrows, in one transaction. Each escrow closes inside its
 * own savepoint (Tx.savepoint), so a fault in one, a JS error or a
 * database error, leaves it exactly as it was and the others of the pass still close.
 *
 * 60 per pass: a pass's fixed costs (the locking and reading statements, COMMIT, the wait for its
 * leaves' integration batch) are shared by more closings than the 25 of before, which closed
 * 18–20% fewer escrows per second (docs/performance.md §4.1). Not more than 64: each closing's savepoint
 * that wrote is a subtransaction, and a transaction with more than 64 of them overflows Postgres's
 * per-backend subtransaction cache (PGPROC_MAX_CACHED_SUBXIDS), after which every session's
 * snapshots look transaction ids up in pg_subtrans while the pass runs. Passes of 100 and 200 made
 * the sweep's floor (the same statements) slower, which is that cliff.
 */
export const SWEEP_BATCH = 60;

export async function sweepOnce(
  svc: Services,
  opts: { batch?: number; onError?: (id: string, err: unknown) => void } = {},
): Promise<SweepResult> {
  // No lock of the sweep's own and none of the log's: closings only sequence their leaves (the
  // integrator indexes them after the commit), so passes on several instances run side by side on
  // disjoint escrows, and a user's command waits at most for the one escrow it shares with a pass.
  const batch = opts.batch ?? SWEEP_BATCH;
  // A log that may not grow now (its database is behind its witnesses, or they have not answered
  // yet: docs/operations.md §3) closes nothing: the deadlines wait for the next pass.
  if (!svc.proofLog.gate.mayAppend()) return { ran: false, closed: 0, failed: 0, errors: 0 };
  return svc.db.tx(async (tx) => {
    // Lock: every escrow of the batch is row-locked here, before any closing touches custody or the
    // fault row; escrows a command (or another instance's pass) holds are skipped until the next
    // pass. Locking them one by one mid-batch deadlocked against commands holding one escrow.
    const due = await tx.query<{ id: string }>(
      'SELECT id FROM escrows WHERE deadline_at <= svc_now() ORDER BY deadline_at, id LIMIT $1 FOR UPDATE SKIP LOCKED',
      [batch],
    );
    const result: SweepResult = { ran: true, closed: 0, failed: 0, errors: 0 };
    // Read: every locked escrow of the pass in one statement (its snapshot is taken after the locks
    // are held, so it sees every commit to them), and each one checked again: a command may have
    // moved it between its deadline passing and this pass locking it.
    const todo: Due[] = (
      await readLocked(
        tx,
        due.map((d) => d.id),
      )
    )
      .filter(isDue)
      .map((e) => ({ e, closing: timeoutClosing(e) }));
    for (let i = 0; i < todo.length; i++) {
      const d = todo[i];
      try {
        const r = await tx.savepoint((sp) => closeExpired(sp, svc, d, todo[i + 1]));
        if (r === 'closed') result.closed++;
        if (r === 'failed') result.failed++;
      } catch (err) {
        result.errors++;
        opts.onError?.(d.e.id, err);
      }
    }
    return result;
  });
}
