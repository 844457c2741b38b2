// The webhook outbox's statements: claim runs of due rows per URL, record results, dead-letter (docs/protocol.md §14.3).
//
// Concurrency per URL, not order: a URL may have up to WEBHOOK_CONCURRENCY deliveries in flight, so
// the events of one escrow can arrive out of order (docs/protocol.md §14.3 says how a receiver orders them).
// A claimed row is leased to one sender (lease_owner, lease_until). A URL whose rows are leased by one
// sender is skipped by every other sender, so the per-URL cap holds across instances; the owner keeps
// claiming that URL while it has leases, and any sender may take it once they are gone (or run out:
// a crashed sender's rows are due again when their lease ends, at-least-once, nothing lost).
import type { Queryable, Tx } from '../db/types.ts';

/** A claimed row with its trail entry, the event's stored x-proof signature, and the signing keys. */
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
  /** The escrow's metadata (fixed at creation), carried in the event body (docs/protocol.md §3.5). */
  metadata: Record<string, string> | null;
  /** The endpoint's Standard Webhooks secret (stored base64); null once the URL is unregistered. */
  secret: string | null;
  /** The key owning the URL now: its id, or '' for root and the open sandbox (and an unregistered URL). */
  owner: string;
  /** The deployment's active Ed25519 webhook key, read in the same statement (hex). */
  keyPublic: string;
}

export interface ClaimOptions {
  /** The claiming sender: its leases keep other senders off the URLs it works. */
  owner: string;
  /** Rows a sender may hold (leased, queued or in flight) per URL. */
  hold: number;
  /** URLs held to `holdSlow` instead (slow or failing receivers: no queue behind the ones in flight). */
  slowUrls: string[];
  holdSlow: number;
  /** Rows claimed at most in this statement, over all URLs. */
  limit: number;
  leaseMs: number;
  /** Rows one owner's URLs may hold in this sender (WEBHOOK_KEY_MAX_IN_FLIGHT), and what each holds now. */
  ownerMax: number;
  ownerHeld: ReadonlyMap<string, number>;
}

/** A stored x-proof signature made since the last flush. */
export interface NewSignature {
  escrowId: string;
  idx: number;
  signature: string;
  publicKey: string;
}

/**
 * The lock that serialises claims across instances: transaction-scoped, per schema, tried not waited
 * for. Claims are a few milliseconds; a sender that does not get it claims at its next tick. Under it,
 * the claim's fresh READ COMMITTED snapshot sees every other sender's committed leases, so two senders
 * never both take one URL.
 */
const CLAIM_LOCK = `pg_try_advisory_xact_lock(hashtext(current_schema() || ':webhook-claim'))`;

/** A failed attempt to record: retry after waitMs, or (deadLetterId set) move to the dead letters. */
export interface FailedAttempt {
  id: string;
  /** The attempt count of the claim that made it: the fence (a row re-claimed since is left alone). */
  attempts: number;
  error: string;
  status: number | null;
  waitMs: number;
  deadLetterId: string | null;
}

/** What a sender has gathered since its last tick, written by one statement. */
export interface Results {
  delivered: string[];
  failed: FailedAttempt[];
  sigs: NewSignature[];
}

/**
 * One statement, the start of every tick: deletes the rows delivered since the last tick (a 2xx is
 * final, whoever holds the row now); schedules each failed attempt's retry and drops its lease, or
 * moves it to dead_letters after its last attempt, each fenced on `attempts` so a result that comes
 * back after the lease expired and another sender re-claimed the row changes nothing; stores new
 * x-proof signatures (Ed25519 is deterministic, so a conflicting row holds the same bytes); counts
 * all of it; and tries the claim lock. Lock: row locks on the rows written, and on
 * webhook_counters (id = 1) once per tick, not once per event.
 */
export async function flushAndLock(tx: Tx, r: Results, wantLock: boolean): Promise<boolean> {
  const retry = r.failed.filter((f) => f.deadLetterId === null);
  const dead = r.failed.filter((f) => f.deadLetterId !== null);
  const [row] = await tx.query<{ locked: boolean }>(
    `WITH d AS (DELETE FROM outbox WHERE id = ANY($1::bigint[]) RETURNING 1),
          s AS (INSERT INTO event_signatures (escrow_id, idx, signature, public_key)
                SELECT * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[])
                ON CONFLICT (escrow_id, idx) DO NOTHING RETURNING 1),
          r AS (UPDATE outbox o
                   SET next_attempt_at = now() + x.wait * interval '1 millisecond', lease_until = NULL, lease_owner = NULL,
                       last_error = x.error, last_status = x.status
                  FROM unnest($8::bigint[], $9::int[], $10::int[], $11::text[], $12::int[]) AS x(id, attempts, wait, error, status)
                 WHERE o.id = x.id AND o.attempts = x.attempts RETURNING 1),
          g AS (DELETE FROM outbox o
                 USING unnest($13::bigint[], $14::int[], $15::text[], $16::text[], $17::int[]) AS x(id, attempts, dl, error, status)
                 WHERE o.id = x.id AND o.attempts = x.attempts
                 RETURNING x.dl, o.escrow_id, o.idx, o.url, o.attempts, x.error, x.status, o.first_attempt_at),
          i AS (INSERT INTO dead_letters (id, escrow_id, idx, url, attempts, last_error, last_status, first_attempt_at, dead_at, owner_key)
                SELECT dl, escrow_id, idx, url, attempts, error, status, COALESCE(first_attempt_at, svc_now()), svc_now(),
                       (SELECT w.owner_key FROM webhooks w WHERE w.url = g.url) FROM g
                RETURNING 1),
          c AS (UPDATE webhook_counters
                   SET delivered = delivered + (SELECT count(*) FROM d), failed = failed + $18::int,
                       dead_lettered = dead_lettered + (SELECT count(*) FROM i)
                 WHERE id = 1 AND $6::int + $18::int > 0 RETURNING 1)
     SELECT CASE WHEN $7::boolean THEN ${CLAIM_LOCK} ELSE false END AS locked,
            (SELECT count(*) FROM s) + (SELECT count(*) FROM c) + (SELECT count(*) FROM r) AS written`,
    [
      r.delivered,
      r.sigs.map((x) => x.escrowId),
      r.sigs.map((x) => x.idx),
      r.sigs.map((x) => x.signature),
      r.sigs.map((x) => x.publicKey),
      r.delivered.length,
      wantLock,
      retry.map((f) => f.id),
      retry.map((f) => f.attempts),
      retry.map((f) => f.waitMs),
      retry.map((f) => f.error),
      retry.map((f) => f.status),
      dead.map((f) => f.id),
      dead.map((f) => f.attempts),
      dead.map((f) => f.deadLetterId),
      dead.map((f) => f.error),
      dead.map((f) => f.status),
      r.failed.length,
    ],
  );
  return row.locked === true;
}

/**
 * Claims due rows, a run per URL: for each URL no other sender holds, up to its hold minus what this
 * sender already holds, oldest due first; then per owner (the key that registered the URL) at most
 * `ownerMax` minus what it holds, so one key's URLs, however many and however dead, never take the
 * sender's every slot; interleaved across owners first (every owner's first row before any owner's
 * second) and URLs within them, up to `limit`. Run under flushAndLock's lock, in the same transaction.
 *
 * URLs are found with a loose index scan, and each URL's due rows by (url, next_attempt_at), so the
 * cost grows with the number of URLs, not with the backlog or the retries behind a dead receiver.
 * FOR UPDATE OF o SKIP LOCKED: a row whose result another sender is recording right now is skipped.
 */
export async function claimRuns(tx: Tx, o: ClaimOptions): Promise<ClaimedRow[]> {
  const rows = await tx.query(
    `WITH RECURSIVE urls AS (
       (SELECT url FROM outbox ORDER BY url LIMIT 1)
       UNION ALL
       SELECT (SELECT o.url FROM outbox o WHERE o.url > u.url ORDER BY o.url LIMIT 1) FROM urls u WHERE u.url IS NOT NULL
     ), owned AS (
       SELECT u.url, COALESCE((SELECT w.owner_key FROM webhooks w WHERE w.url = u.url), '') AS owner FROM urls u WHERE u.url IS NOT NULL
     ), room AS (
       SELECT u.url, u.owner,
              (CASE WHEN u.url = ANY($3::text[]) THEN $4::int ELSE $2::int END)
                - (SELECT count(*) FROM outbox l WHERE l.url = u.url AND l.lease_until IS NOT NULL AND l.lease_until > now() AND l.lease_owner = $1)::int AS free
         FROM owned u
        -- An owner whose share is full is skipped whole: its URLs cost no row scan.
        WHERE u.owner <> ALL($10::text[])
          AND NOT EXISTS (SELECT 1 FROM outbox l WHERE l.url = u.url AND l.lease_until IS NOT NULL AND l.lease_until > now() AND l.lease_owner <> $1)
     ), picked AS (
       SELECT p.id, p.next_attempt_at, r.owner, row_number() OVER (PARTITION BY r.url ORDER BY p.next_attempt_at, p.id) AS rank
         FROM room r
        CROSS JOIN LATERAL (
          SELECT o.id, o.next_attempt_at FROM outbox o
           WHERE o.url = r.url AND o.next_attempt_at <= now()
           ORDER BY o.next_attempt_at, o.id
           LIMIT greatest(r.free, 0)) p
     ), by_owner AS (
       SELECT p.id, p.next_attempt_at, p.rank, p.owner,
              row_number() OVER (PARTITION BY p.owner ORDER BY p.rank, p.next_attempt_at, p.id) AS orank
         FROM picked p
     ), allowed AS (
       SELECT b.id, b.next_attempt_at, b.rank, b.orank FROM by_owner b
         LEFT JOIN unnest($7::text[], $8::int[]) AS h(owner, held) ON h.owner = b.owner
        WHERE b.orank <= $9::int - COALESCE(h.held, 0)
     ), claimed AS (
       SELECT o.id, o.escrow_id, o.idx FROM outbox o
        WHERE o.id IN (SELECT id FROM allowed ORDER BY orank, rank, next_attempt_at, id LIMIT $5)
          AND o.next_attempt_at <= now()
        FOR UPDATE OF o SKIP LOCKED
     ), wk AS (
       SELECT public_key FROM service_keys WHERE purpose = 'webhook' AND valid_until IS NULL
     )
     UPDATE outbox o
        SET attempts = o.attempts + 1,
            next_attempt_at = now() + $6 * interval '1 millisecond',
            lease_until = now() + $6 * interval '1 millisecond',
            lease_owner = $1,
            first_attempt_at = COALESCE(o.first_attempt_at, svc_now())
       FROM claimed c
       JOIN trail_entries t ON t.escrow_id = c.escrow_id AND t.idx = c.idx
       JOIN escrows e ON e.id = c.escrow_id
       LEFT JOIN event_signatures s ON s.escrow_id = c.escrow_id AND s.idx = c.idx
       CROSS JOIN wk
      WHERE o.id = c.id
     RETURNING o.id::text AS id, o.escrow_id, o.idx, o.url, o.attempts, t.event, t.at, t.body, s.signature, s.public_key,
               (SELECT w.secret FROM webhooks w WHERE w.url = o.url) AS secret, wk.public_key AS key_public, e.metadata,
               COALESCE((SELECT w.owner_key FROM webhooks w WHERE w.url = o.url), '') AS url_owner`,
    [
      o.owner,
      o.hold,
      o.slowUrls,
      o.holdSlow,
      o.limit,
      o.leaseMs,
      [...o.ownerHeld.keys()],
      [...o.ownerHeld.values()],
      o.ownerMax,
      [...o.ownerHeld].filter(([, n]) => n >= o.ownerMax).map(([k]) => k),
    ],
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
      secret: r.secret ?? null,
      owner: r.url_owner ?? '',
      keyPublic: r.key_public,
      metadata: r.metadata ? JSON.parse(r.metadata) : null,
    }))
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

/**
 * Gives claimed rows that were never sent back (a stopping sender, or a queued row whose lease ran too
 * low to cover an attempt): due now, the claim's attempt undone, so no attempt is lost. Fenced on the
 * owner and the attempt count, so a row another sender has claimed since is left alone.
 */
export async function release(q: Queryable, owner: string, rows: Array<{ id: string; attempts: number }>): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE outbox o
        SET attempts = o.attempts - 1, next_attempt_at = now(), lease_until = NULL, lease_owner = NULL,
            first_attempt_at = CASE WHEN o.attempts = 1 THEN NULL ELSE o.first_attempt_at END
       FROM unnest($2::bigint[], $3::int[]) AS r(id, attempts)
      WHERE o.id = r.id AND o.attempts = r.attempts AND o.lease_owner = $1`,
    [owner, rows.map((r) => r.id), rows.map((r) => r.attempts)],
  );
}
