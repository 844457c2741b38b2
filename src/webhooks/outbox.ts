// The webhook outbox's statements: claim due rows, record an attempt's result, dead-letter (CONTRACT §5).
//
// Per-URL order: only the oldest outbox row of each URL (its head) may be claimed, and it stays in the
// table, leased, while it is in flight; the next row of that URL becomes eligible only once the head is
// delivered or dead-lettered. So a receiver sees its events one at a time in outbox order, which for
// one escrow is trail order (the escrow row lock serialises its writes). A failing receiver delays only
// its own queue, by at most the backoff total, and a slow one by at most WEBHOOK_TIMEOUT_MS per attempt.
import type { Queryable } from '../db/types.ts';

/** A claimed row with its trail entry and, once made, the event's stored x-proof signature. */
export interface ClaimedRow {
  id: string;
  escrowId: string;
  idx: number;
  url: string;
  /** Attempts including this one: the fence for recording its result. */
  attempts: number;
  event: string;
  at: string;
  body: unknown;
  signature: string | null;
  signer: string | null;
  /** The escrow's metadata (fixed at creation), carried in the event body (CONTRACT §8). */
  metadata: Record<string, string> | null;
}

/**
 * Claims up to `limit` due heads, at most one per URL, by bumping their next_attempt_at to now + lease
 * in one autocommit statement, so the claim is committed before anything is sent. A crash mid-send
 * loses nothing: the row is still there and becomes due again when the lease runs out (at-least-once).
 *
 * Lock: FOR UPDATE OF o SKIP LOCKED on the head rows, held for this statement only. Two instances
 * claiming at once take disjoint rows; a head another instance is claiming (or completing) is skipped,
 * not waited for. EvalPlanQual re-checks `o.next_attempt_at <= now()` on the newest row version, so a
 * head claimed and committed by another instance after our snapshot is not claimed twice.
 *
 * URLs are found with a loose index scan over outbox (url, id), so the cost grows with the number of
 * URLs, not with the backlog behind a dead receiver.
 */
export async function claimDue(q: Queryable, limit: number, leaseMs: number): Promise<ClaimedRow[]> {
  const rows = await q.query(
    `WITH RECURSIVE urls AS (
       (SELECT url FROM outbox ORDER BY url LIMIT 1)
       UNION ALL
       SELECT (SELECT o.url FROM outbox o WHERE o.url > u.url ORDER BY o.url LIMIT 1) FROM urls u WHERE u.url IS NOT NULL
     ), heads AS (
       SELECT h.id FROM urls u
       CROSS JOIN LATERAL (SELECT o.id FROM outbox o WHERE o.url = u.url ORDER BY o.id LIMIT 1) h
       WHERE u.url IS NOT NULL
     ), claimed AS (
       SELECT o.id, o.escrow_id, o.idx FROM outbox o
        WHERE o.id IN (SELECT id FROM heads) AND o.next_attempt_at <= now()
        ORDER BY o.next_attempt_at, o.id
        LIMIT $1
        FOR UPDATE OF o SKIP LOCKED
     )
     UPDATE outbox o
        SET attempts = o.attempts + 1,
            next_attempt_at = now() + $2 * interval '1 millisecond',
            first_attempt_at = COALESCE(o.first_attempt_at, svc_now())
       FROM claimed c
       JOIN trail_entries t ON t.escrow_id = c.escrow_id AND t.idx = c.idx
       JOIN escrows e ON e.id = c.escrow_id
       LEFT JOIN event_signatures s ON s.escrow_id = c.escrow_id AND s.idx = c.idx
      WHERE o.id = c.id
     RETURNING o.id::text AS id, o.escrow_id, o.idx, o.url, o.attempts, t.event, t.at, t.body, s.signature, s.public_key, e.metadata`,
    [limit, leaseMs],
  );
  return rows
    .map((r) => ({
      id: String(r.id),
      escrowId: r.escrow_id,
      idx: Number(r.idx),
      url: r.url,
      attempts: Number(r.attempts),
      event: r.event,
      at: r.at,
      body: JSON.parse(r.body),
      signature: r.signature ?? null,
      signer: r.public_key ?? null,
      metadata: r.metadata ? JSON.parse(r.metadata) : null,
    }))
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

/**
 * Stores an event's x-proof signature once for all URLs and attempts. Two instances signing the same
 * event at once: the first insert wins and both use its signature (the conflict update returns it).
 */
export async function storeSignature(q: Queryable, escrowId: string, idx: number, signature: string, publicKey: string): Promise<{ signature: string; signer: string }> {
  const [r] = await q.query(
    `INSERT INTO event_signatures (escrow_id, idx, signature, public_key) VALUES ($1, $2, $3, $4)
     ON CONFLICT (escrow_id, idx) DO UPDATE SET signature = event_signatures.signature
     RETURNING signature, public_key`,
    [escrowId, idx, signature, publicKey],
  );
  return { signature: r.signature, signer: r.public_key };
}

// The counter updates below take the row lock on webhook_counters (id = 1) for their one statement:
// concurrent senders queue on it for microseconds; the counts are exact across instances.

/** A 2xx: the row is done. Deleted whoever holds the lease now; the event was delivered either way. */
export async function markDelivered(q: Queryable, id: string): Promise<void> {
  await q.query(
    `WITH d AS (DELETE FROM outbox WHERE id = $1::bigint RETURNING 1)
     UPDATE webhook_counters SET delivered = delivered + (SELECT count(*) FROM d) WHERE id = 1`,
    [id],
  );
}

export interface Failure {
  error: string;
  status: number | null;
}

/**
 * A failed attempt: schedule the next one after `waitMs`, fenced on `attempts` so a result that comes
 * back after the lease expired and another instance re-claimed the row changes nothing.
 */
export async function scheduleRetry(q: Queryable, row: ClaimedRow, f: Failure, waitMs: number): Promise<void> {
  await q.query(
    `WITH u AS (
       UPDATE outbox SET next_attempt_at = now() + $3 * interval '1 millisecond', last_error = $4, last_status = $5
        WHERE id = $1::bigint AND attempts = $2 RETURNING 1)
     UPDATE webhook_counters SET failed = failed + 1 WHERE id = 1`,
    [row.id, row.attempts, waitMs, f.error, f.status],
  );
}

/** The last attempt failed: move the row to dead_letters in one statement (same fence as scheduleRetry). */
export async function deadLetter(q: Queryable, row: ClaimedRow, f: Failure, deadLetterId: string): Promise<void> {
  await q.query(
    `WITH d AS (
       DELETE FROM outbox WHERE id = $1::bigint AND attempts = $2
       RETURNING escrow_id, idx, url, attempts, first_attempt_at
     ), i AS (
       INSERT INTO dead_letters (id, escrow_id, idx, url, attempts, last_error, last_status, first_attempt_at, dead_at)
       SELECT $3, escrow_id, idx, url, attempts, $4, $5, COALESCE(first_attempt_at, svc_now()), svc_now() FROM d
       RETURNING 1)
     UPDATE webhook_counters SET failed = failed + 1, dead_lettered = dead_lettered + (SELECT count(*) FROM i) WHERE id = 1`,
    [row.id, row.attempts, deadLetterId, f.error, f.status],
  );
}
