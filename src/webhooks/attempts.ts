// Webhook attempts as they happened: one row per POST with its status, error and timing, recorded by
// the sender and read by GET /v1/webhooks/attempts (the console's deliveries view and escrow page).
import type { Queryable } from '../db/types.ts';
import { badRequest } from '../errors.ts';
import { seenBy } from './registry.ts';

// The wire shape is the client package's (defined once, so the service and the client cannot drift apart).
import type { WebhookAttempt } from '@escrow-settlement/protocol/resources';
export type { WebhookAttempt };

export interface AttemptRecord {
  escrowId: string;
  idx: number;
  url: string;
  attempt: number;
  status: number | null;
  error: string | null;
  durationMs: number;
  outcome: WebhookAttempt['outcome'];
}

/**
 * Records a sender tick's attempts in one statement, inside the tick's transaction (src/webhooks/sender.ts):
 * a run of results costs one statement, not one per POST. `at` is the service clock when the tick writes.
 */
export async function recordAttempts(q: Queryable, list: ReadonlyArray<AttemptRecord>): Promise<void> {
  if (list.length === 0) return;
  await q.query(
    `INSERT INTO webhook_attempts (escrow_id, idx, url, attempt, status, error, duration_ms, outcome, at)
     SELECT e, i, u, a, s, er, d, o, svc_now()
       FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $5::int[], $6::text[], $7::int[], $8::text[]) AS x(e, i, u, a, s, er, d, o)`,
    [
      list.map((a) => a.escrowId),
      list.map((a) => a.idx),
      list.map((a) => a.url),
      list.map((a) => a.attempt),
      list.map((a) => a.status),
      list.map((a) => (a.error === null ? null : a.error.slice(0, 500))),
      list.map((a) => Math.max(0, Math.round(a.durationMs))),
      list.map((a) => a.outcome),
    ],
  );
}

/** Attempts newest first (a confined key's: its URLs' attempts on escrows it sees), optionally one escrow's; a page of `limit` with nextCursor, or all without it. */
export async function listAttempts(
  q: Queryable,
  opts: { escrowId?: string; limit?: number; cursor?: string; scope?: string | null },
): Promise<{ attempts: WebhookAttempt[]; nextCursor?: string }> {
  if (opts.cursor !== undefined && !/^[1-9][0-9]{0,17}$/.test(opts.cursor))
    throw badRequest('cursor must be the nextCursor of a previous page');
  const params: unknown[] = [opts.escrowId ?? null, opts.cursor ?? null, opts.scope ?? null];
  const limit = opts.limit === undefined ? '' : `LIMIT ${opts.limit + 1}`;
  const rows = await q.query(
    `SELECT a.id::text AS id, a.escrow_id, a.idx, a.url, a.attempt, a.status, a.error, a.duration_ms, a.outcome, a.at, t.event
       FROM webhook_attempts a JOIN trail_entries t ON t.escrow_id = a.escrow_id AND t.idx = a.idx
      WHERE ($1::text IS NULL OR a.escrow_id = $1) AND ($2::bigint IS NULL OR a.id < $2::bigint) AND ${seenBy('a', 3)}
      ORDER BY a.id DESC ${limit}`,
    params,
  );
  const more = opts.limit !== undefined && rows.length > opts.limit;
  const page = more ? rows.slice(0, opts.limit) : rows;
  const attempts = page.map(
    (r): WebhookAttempt => ({
      id: String(r.id),
      escrowId: r.escrow_id,
      index: Number(r.idx),
      event: r.event,
      url: r.url,
      attempt: Number(r.attempt),
      ...(r.status !== null && r.status !== undefined ? { status: Number(r.status) } : {}),
      ...(r.error !== null && r.error !== undefined ? { error: r.error } : {}),
      durationMs: Number(r.duration_ms),
      outcome: r.outcome,
      at: (r.at instanceof Date ? r.at : new Date(r.at)).toISOString(),
    }),
  );
  return more ? { attempts, nextCursor: attempts[attempts.length - 1].id } : { attempts };
}
