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
  /** Places each URL has of its own inside its owner's share, at most (WEBHOOK_CONCURRENCY: its requests in flight). */
  reserveMax: number;
  /** Rows this sender holds per URL now. */
  urlHeld: ReadonlyMap<string, number>;
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

/**
 * How an endpoint's attempts since the last tick ended: `ok` when its latest one succeeded; else
 * `fresh` when an earlier one of them succeeded (its failures start now), and the latest's error.
 */
export interface EndpointOutcome {
  url: string;
  ok: boolean;
  fresh: boolean;
  error: string | null;
}

/** What a sender has gathered since its last tick, written by one statement. */
export interface Results {
  delivered: string[];
  failed: FailedAttempt[];
  sigs: NewSignature[];
}

/** An endpoint the tick disabled: every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS (docs/protocol.md §14.5). */
export interface DisabledEndpoint {
  url: string;
  /** Its owner: a minted key's id, or null for root and the open sandbox. */
  owner: string | null;
  failingSince: string;
  disabledAt: string;
  reason: string;
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
 * Keeps each endpoint's failing_since (the database clock at its first failure since its last
 * success) and disables those that have failed every attempt for `disableAfterHours` (0: never);
 * returns the endpoints it disabled. Only endpoints whose state changes are written. Its own
 * statement, before flushAndLock's: a tick locks webhooks rows before outbox rows, in the order
 * unregistering does, so the two cannot deadlock.
 */
export async function recordEndpoints(
  tx: Tx,
  endpoints: ReadonlyArray<EndpointOutcome>,
  disableAfterHours: number,
): Promise<DisabledEndpoint[]> {
  if (endpoints.length === 0) return [];
  const rows = await tx.query(
    `WITH y AS (
       SELECT x.url, x.ok, x.fresh, x.error, w.failing_since AS since,
              $5::float8 > 0 AND NOT x.ok AND NOT x.fresh AND w.disabled_at IS NULL AND w.failing_since IS NOT NULL
                AND w.failing_since <= svc_now() - $5::float8 * interval '1 hour' AS off
         -- ok and fresh come as text ('t' / 'f'): the Postgres driver (postgres.js) does not bind a boolean array.
         FROM (SELECT u.url, u.ok = 't' AS ok, u.fresh = 't' AS fresh, u.error
                 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(url, ok, fresh, error)) AS x
         JOIN webhooks w ON w.url = x.url
        -- Only endpoints whose state changes: a dead URL failing again and again writes nothing.
        WHERE CASE WHEN x.ok THEN w.failing_since IS NOT NULL ELSE x.fresh OR w.failing_since IS NULL END
           OR ($5::float8 > 0 AND NOT x.ok AND w.disabled_at IS NULL AND w.failing_since <= svc_now() - $5::float8 * interval '1 hour'))
     UPDATE webhooks w
        SET failing_since = CASE WHEN y.ok THEN NULL WHEN y.fresh THEN svc_now() ELSE COALESCE(w.failing_since, svc_now()) END,
            disabled_at = CASE WHEN y.off THEN svc_now() ELSE w.disabled_at END,
            disabled_reason = CASE WHEN y.off
              THEN 'every attempt failed for ' || $5::float8 || ' hours (WEBHOOK_DISABLE_AFTER_HOURS); the last: ' || COALESCE(y.error, 'no answer')
              ELSE w.disabled_reason END
       FROM y WHERE w.url = y.url
     RETURNING w.url, w.owner_key, y.off, y.since, w.disabled_at, w.disabled_reason`,
    [
      endpoints.map((x) => x.url),
      endpoints.map((x) => (x.ok ? 't' : 'f')),
      endpoints.map((x) => (x.fresh ? 't' : 'f')),
      endpoints.map((x) => x.error),
      disableAfterHours,
    ],
  );
  const iso = (t: Date | string) => (t instanceof Date ? t : new Date(t)).toISOString();
  return rows
    .filter((d) => d.off === true)
    .map((d) => ({
      url: d.url,
      owner: d.owner_key ?? null,
      failingSince: iso(d.since),
      disabledAt: iso(d.disabled_at),
      reason: d.disabled_reason,
    }));
}

/**
 * Tells the owner's other endpoints (enabled ones) that an endpoint was disabled: a `webhook.disabled`
 * notice per disabled endpoint, queued in the outbox like an escrow's event (docs/protocol.md §14.5).
 * In the tick's transaction, so the notice exists exactly when the endpoint is disabled.
 */
export async function queueDisabledNotices(tx: Tx, list: ReadonlyArray<DisabledEndpoint & { id: string }>): Promise<void> {
  if (list.length === 0) return;
  await tx.query(
    `WITH n AS (
       INSERT INTO webhook_notices (id, owner_key, event, at, body)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
       RETURNING id, owner_key)
     INSERT INTO outbox (escrow_id, idx, url)
     SELECT n.id, 0, w.url FROM n JOIN unnest($1::text[], $6::text[]) AS d(id, url) ON d.id = n.id
       JOIN webhooks w ON w.owner_key IS NOT DISTINCT FROM n.owner_key AND w.url <> d.url AND w.disabled_at IS NULL`,
    [
      list.map((d) => d.id),
      list.map((d) => d.owner),
      list.map(() => 'webhook.disabled'),
      list.map((d) => d.disabledAt),
      list.map((d) => JSON.stringify({ url: d.url, disabledAt: d.disabledAt, failingSince: d.failingSince, reason: d.reason })),
      list.map((d) => d.url),
    ],
  );
}

/**
 * Claims due rows, a run per URL: for each URL no other sender holds, up to its hold minus what this
 * sender already holds, oldest due first. Then the owner's share (the key that registered the URL,
 * `ownerMax`, so one key's URLs, however many and however dead, never take the sender's every slot)
 * is split: each of the owner's URLs with rows in the outbox has places of its own, `reserveMax`
 * (its requests in flight) or the share divided by the number of such URLs if that is smaller, and
 * the rest of the share is common to the owner's URLs. A URL's rows within its own places are always
 * claimed, whatever the owner's other URLs hold, so one dead URL of a key never delays another of
 * its URLs (docs/security.md "Webhook fairness"); only rows beyond them wait for the common part.
 * Interleaved across owners first (every owner's first row before any owner's second) and URLs
 * within them, up to `limit`. Run under flushAndLock's lock, in the same transaction. URLs of
 * disabled endpoints are not claimed (docs/protocol.md §14.5): their rows wait for re-enabling.
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
       SELECT u.url, COALESCE(w.owner_key, '') AS owner
         FROM urls u LEFT JOIN webhooks w ON w.url = u.url
        WHERE u.url IS NOT NULL AND w.disabled_at IS NULL
     ), placed AS (
       -- Each URL's own places (reserve) and what this sender holds of it.
       SELECT u.url, u.owner, COALESCE(h.held, 0) AS held,
              least($9::int, $7::int / count(*) OVER (PARTITION BY u.owner))::int AS reserve
         FROM owned u LEFT JOIN unnest($10::text[], $11::int[]) AS h(url, held) ON h.url = u.url
     ), common AS (
       -- What is left of each owner's share beyond its URLs' own places and the rows held past them.
       SELECT p.owner, $7::int - sum(p.reserve)::int - sum(greatest(p.held - p.reserve, 0))::int AS left
         FROM placed p GROUP BY p.owner
     ), room AS (
       SELECT u.url, u.owner, u.held, u.reserve,
              (CASE WHEN u.url = ANY($3::text[]) THEN $4::int ELSE $2::int END)
                - (SELECT count(*) FROM outbox l WHERE l.url = u.url AND l.lease_until IS NOT NULL AND l.lease_until > now() AND l.lease_owner = $1)::int AS free
         FROM placed u
        -- A URL whose own places are taken, of an owner whose share is full, costs no row scan.
        WHERE NOT (u.owner = ANY($8::text[]) AND u.held >= u.reserve)
          AND NOT EXISTS (SELECT 1 FROM outbox l WHERE l.url = u.url AND l.lease_until IS NOT NULL AND l.lease_until > now() AND l.lease_owner <> $1)
     ), picked AS (
       SELECT p.id, p.next_attempt_at, r.owner, row_number() OVER (PARTITION BY r.url ORDER BY p.next_attempt_at, p.id) AS rank,
              r.held, r.reserve
         FROM room r
        CROSS JOIN LATERAL (
          SELECT o.id, o.next_attempt_at FROM outbox o
           WHERE o.url = r.url AND o.next_attempt_at <= now()
           ORDER BY o.next_attempt_at, o.id
           LIMIT greatest(r.free, 0)) p
     ), by_owner AS (
       SELECT p.id, p.next_attempt_at, p.rank, p.owner, p.held + p.rank <= p.reserve AS own,
              row_number() OVER (PARTITION BY p.owner, p.held + p.rank <= p.reserve ORDER BY p.rank, p.next_attempt_at, p.id) AS orank
         FROM picked p
     ), allowed AS (
       SELECT b.id, b.next_attempt_at, b.rank, b.orank FROM by_owner b JOIN common c ON c.owner = b.owner
        WHERE b.own OR b.orank <= c.left
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
       -- An escrow's event (its trail entry), or a notice about an endpoint (webhook_notices).
       LEFT JOIN trail_entries t ON t.escrow_id = c.escrow_id AND t.idx = c.idx
       LEFT JOIN escrows e ON e.id = c.escrow_id
       LEFT JOIN webhook_notices n ON n.id = c.escrow_id AND c.idx = 0
       LEFT JOIN event_signatures s ON s.escrow_id = c.escrow_id AND s.idx = c.idx
       CROSS JOIN wk
      WHERE o.id = c.id AND (t.idx IS NOT NULL OR n.id IS NOT NULL)
     RETURNING o.id::text AS id, o.escrow_id, o.idx, o.url, o.attempts, COALESCE(t.event, n.event) AS event, COALESCE(t.at, n.at) AS at,
               COALESCE(t.body, n.body) AS body, s.signature, s.public_key,
               (SELECT w.secret FROM webhooks w WHERE w.url = o.url) AS secret, wk.public_key AS key_public, e.metadata,
               COALESCE((SELECT w.owner_key FROM webhooks w WHERE w.url = o.url), '') AS url_owner`,
    [
      o.owner,
      o.hold,
      o.slowUrls,
      o.holdSlow,
      o.limit,
      o.leaseMs,
      o.ownerMax,
      [...o.ownerHeld].filter(([, n]) => n >= o.ownerMax).map(([k]) => k),
      o.reserveMax,
      [...o.urlHeld.keys()],
      [...o.urlHeld.values()],
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
