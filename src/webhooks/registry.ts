// Webhook registrations, dead letters and redelivery: the commands behind /v1/webhooks (docs/protocol.md §14, §22).
import type { Db, Queryable } from '../db/types.ts';
import { newId } from '../crypto/ids.ts';
import { engineEvent } from './event.ts';
import { newEndpointSecret } from './standard.ts';
import type { DeadLetter, WebhookEndpoint as Endpoint } from '@escrow-settlement/protocol/resources';
import { invalidState } from '../errors.ts';

/** A delivery that never succeeded (docs/protocol.md §22); its wire shape lives in the client package. */
export type { DeadLetter };

/**
 * Tenancy (docs/protocol.md §14.4): `scope` is the minted key a caller is confined to (tenancy.ts scopeOf),
 * or null for root and the open sandbox, who see everything. A confined key sees a delivery row
 * (dead letter, attempt) of `alias` only when it owns the URL now AND sees the escrow: so a URL that
 * changed hands never shows its former owner's escrows to the new one. `$n` is the scope parameter.
 */
export const seenBy = (alias: string, n: number) => `($${n}::text IS NULL OR (
    EXISTS (SELECT 1 FROM webhooks w WHERE w.url = ${alias}.url AND w.owner_key = $${n}::text)
    AND EXISTS (SELECT 1 FROM escrow_tenants et WHERE et.escrow_id = ${alias}.escrow_id AND et.key_id = $${n}::text)))`;

/**
 * Who sees a dead letter: root and the open sandbox (scope null) every one; a minted key those made
 * for a URL it owned when the delivery died (dead_letters.owner_key), of escrows it sees, whether
 * or not it still owns the URL (docs/security.md "Dead letters"). `$n` is the scope parameter.
 */
export const deadSeenBy = (alias: string, n: number) => `($${n}::text IS NULL OR (${alias}.owner_key = $${n}::text
    AND EXISTS (SELECT 1 FROM escrow_tenants et WHERE et.escrow_id = ${alias}.escrow_id AND et.key_id = $${n}::text)))`;

/**
 * Registers a URL for `owner` (a minted key, or null for root and the open sandbox); registering it
 * again keeps the one registration and its secret (docs/protocol.md §14.1). A URL has one owner: another caller
 * registering it is 409 invalid_state (its events are scoped to the owner, so sharing the row would
 * either widen or narrow what the URL receives behind the owner's back).
 * Returns the endpoint's Standard Webhooks secret (stored base64) when this call is the one that
 * shows it, else null: a new registration shows its fresh secret; an endpoint whose secret was never
 * shown (made by migration 005 for a URL registered before it) shows it on its next registration;
 * after that, never again. Lock: the upsert's row lock, and the `secret_revealed = false` condition
 * re-checked on the newest row version, so two concurrent calls reveal a secret at most once.
 */
export async function registerWebhook(q: Queryable, url: string, owner: string | null = null): Promise<string | null> {
  for (;;) {
    const rows = await q.query<{ secret: string }>(
      `INSERT INTO webhooks (url, created_at, secret, secret_revealed, owner_key) VALUES ($1, svc_now(), $2, true, $3)
       ON CONFLICT (url) DO UPDATE SET secret_revealed = true
        WHERE webhooks.secret_revealed = false AND webhooks.owner_key IS NOT DISTINCT FROM $3::text
       RETURNING secret`,
      [url, newEndpointSecret(), owner],
    );
    if (rows.length === 1) return rows[0].secret;
    // Already registered (only re-registrations get here): by this caller, or by another one.
    const held = await q.query<{ owner_key: string | null }>('SELECT owner_key FROM webhooks WHERE url = $1', [url]);
    if (held.length === 0) continue; // unregistered in between: register it afresh
    if (held[0].owner_key !== owner)
      throw invalidState(`url: ${url} is registered by another key; register a URL of your own (another path or query)`);
    return null;
  }
}

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();

/** Registered URLs (a confined key's own) in registration order (keyset on seq, as listDeadLetters). */
export async function listWebhooks(
  q: Queryable,
  after: bigint | null = null,
  limit?: number,
  scope: string | null = null,
): Promise<Array<Endpoint & { seq: string }>> {
  const rows = await q.query(
    `SELECT url, seq::text AS seq, disabled_at, disabled_reason, failing_since FROM webhooks
      WHERE seq > $1 AND ($2::text IS NULL OR owner_key = $2::text)
      ORDER BY seq${limit === undefined ? '' : ' LIMIT $3'}`,
    limit === undefined ? [(after ?? 0n).toString(), scope] : [(after ?? 0n).toString(), scope, limit + 1],
  );
  return rows.map((r) => ({
    url: r.url,
    seq: r.seq,
    disabled: r.disabled_at !== null && r.disabled_at !== undefined,
    ...(r.disabled_at ? { disabledAt: iso(r.disabled_at), disabledReason: r.disabled_reason ?? '' } : {}),
    ...(r.failing_since ? { failingSince: iso(r.failing_since) } : {}),
  }));
}

/**
 * Enables a disabled endpoint again (its owner, or root): deliveries resume, its failing-since clock
 * starts afresh, and the rows it had when it was disabled are sent (docs/protocol.md §14.5). Events
 * made while it was disabled were not queued for it. Null when the URL is not registered (to this
 * caller); else whether it was disabled. Lock: the endpoint's row.
 */
export async function enableWebhook(q: Queryable, url: string, scope: string | null, asGiven: string = url): Promise<boolean | null> {
  const rows = await q.query<{ was: boolean }>(
    `WITH old AS (SELECT url, disabled_at IS NOT NULL AS was FROM webhooks
                   WHERE url = ANY($1::text[]) AND ($2::text IS NULL OR owner_key = $2::text) FOR UPDATE)
     UPDATE webhooks w SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
       FROM old WHERE w.url = old.url RETURNING old.was`,
    [[url, asGiven], scope],
  );
  if (rows.length === 0) return null;
  return rows.some((r) => r.was === true);
}

/**
 * Unregisters a URL and drops its pending deliveries in one transaction; false when it was not
 * registered. A state change committing at the same moment may already have queued its events for
 * the URL (its fan-out read the registration before this commit); those are still delivered once.
 */
export async function unregisterWebhook(db: Db, url: string, scope: string | null = null, asGiven: string = url): Promise<boolean> {
  return db.tx(async (tx) => {
    // A confined key unregisters only its own URL; another key's is "not registered" to it. `asGiven`
    // (the WHATWG form of what the caller sent) also matches a registration stored before URLs were
    // stored canonically (migration 012 could not canonicalise every spelling).
    const gone = await tx.query<{ url: string }>(
      'DELETE FROM webhooks WHERE url = ANY($1::text[]) AND ($2::text IS NULL OR owner_key = $2::text) RETURNING url',
      [[url, asGiven], scope],
    );
    if (gone.length === 0) return false;
    // Row locks on the URL's outbox rows: a row in flight on another instance is deleted once its
    // claim statement ends (a few ms); that sender's result then matches no row and changes nothing.
    await tx.query('DELETE FROM outbox WHERE url = ANY($1::text[])', [gone.map((g) => g.url)]);
    return true;
  });
}

/**
 * Dead letters oldest first (keyset on seq: after the `after` key, at most `limit` + 1 rows so the
 * caller can tell whether another page exists), each event rebuilt exactly as it was sent.
 */
export async function listDeadLetters(
  q: Queryable,
  after: bigint | null = null,
  limit?: number,
  scope: string | null = null,
): Promise<Array<DeadLetter & { seq: string }>> {
  const rows = await q.query(
    `SELECT d.id, d.url, d.escrow_id, d.attempts, d.last_error, d.last_status, d.first_attempt_at, d.dead_at,
            t.event, t.at, t.body, e.metadata, d.seq::text AS seq
       FROM dead_letters d JOIN trail_entries t ON t.escrow_id = d.escrow_id AND t.idx = d.idx
       LEFT JOIN escrows e ON e.id = d.escrow_id
      WHERE d.seq > $1 AND ${deadSeenBy('d', 2)}
      ORDER BY d.seq${limit === undefined ? '' : ' LIMIT $3'}`,
    limit === undefined ? [(after ?? 0n).toString(), scope] : [(after ?? 0n).toString(), scope, limit + 1],
  );
  return rows.map((r) => ({
    id: r.id,
    url: r.url,
    event: engineEvent(r.escrow_id, {
      event: r.event,
      at: r.at,
      body: JSON.parse(r.body),
      metadata: r.metadata ? JSON.parse(r.metadata) : null,
    }),
    attempts: Number(r.attempts),
    lastError: r.last_error,
    ...(r.last_status !== null && r.last_status !== undefined ? { lastStatus: Number(r.last_status) } : {}),
    firstAttemptAt: iso(r.first_attempt_at),
    deadAt: iso(r.dead_at),
    seq: r.seq,
  }));
}

/**
 * Puts a dead letter's event back in the outbox for its URL with a fresh attempt count (docs/protocol.md §14.3);
 * false when the id is unknown (to this caller). The dead letter moves: it leaves the list, and a new
 * one appears if the redelivery fails again. Only to a URL registered now: a dead letter of an
 * unregistered URL stays listed and waits for the URL to be registered again (by its key, for a
 * minted key's). Lock: the DELETE's row lock — two concurrent redeliveries of one id serialise on it
 * and only the first finds the row, so the event is queued once.
 */
export async function redeliverDeadLetter(q: Queryable, id: string, scope: string | null = null): Promise<boolean> {
  // Also the fan-out rule of trailWrite: if the URL is now registered by a minted key that does not
  // see the escrow (the URL changed hands), the event is not sent there, whoever asks.
  const rows = await q.query(
    `WITH d AS (DELETE FROM dead_letters d WHERE d.id = $1 AND ${deadSeenBy('d', 2)}
                  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.url = d.url
                    AND ($2::text IS NULL OR w.owner_key = $2::text)
                    AND (w.owner_key IS NULL
                      OR EXISTS (SELECT 1 FROM escrow_tenants et WHERE et.escrow_id = d.escrow_id AND et.key_id = w.owner_key)))
                RETURNING escrow_id, idx, url)
     INSERT INTO outbox (escrow_id, idx, url) SELECT escrow_id, idx, url FROM d RETURNING id::text AS id`,
    [id, scope],
  );
  if (rows.length === 1) return true;
  // Off the hot path: tell "unknown to you" (404) from a URL that is not registered (to you) now.
  const [seen] = await q.query<{ url: string; owner: string | null; registered: boolean }>(
    `SELECT d.url, w.owner_key AS owner, w.url IS NOT NULL AS registered
       FROM dead_letters d LEFT JOIN webhooks w ON w.url = d.url
      WHERE d.id = $1 AND ${deadSeenBy('d', 2)}`,
    [id, scope],
  );
  if (!seen) return false;
  if (!seen.registered)
    throw invalidState(`dead letter ${id}: ${seen.url} is not registered now; register it again (POST /v1/webhooks), then redeliver`);
  if (scope !== null && seen.owner !== scope)
    throw invalidState(`dead letter ${id}: ${seen.url} is registered by another key now; it cannot be redelivered there`);
  throw invalidState(`dead letter ${id}: its URL is now registered by a key that does not see its escrow; it cannot be redelivered there`);
}

export const newDeadLetterId = () => newId('dlr');
