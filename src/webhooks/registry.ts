// Webhook registrations, dead letters and redelivery: the commands behind /v1/webhooks (SPEC part 4, CONTRACT §4, §7).
import type { Db, Queryable } from '../db/types.ts';
import { newId } from '../crypto/ids.ts';
import { engineEvent, type EngineEvent } from './event.ts';
import { newEndpointSecret } from './standard.ts';
import type { DeadLetter } from '@escrow-settlement/client/resources';

/** A delivery that never succeeded (CONTRACT §4 "Dead letter"); its wire shape lives in the client package. */
export type { DeadLetter };

/**
 * Registers a URL; registering it again keeps the one registration and its secret (CONTRACT §5).
 * Returns the endpoint's Standard Webhooks secret (stored base64) when this call is the one that
 * shows it, else null: a new registration shows its fresh secret; an endpoint whose secret was never
 * shown (made by migration 005 for a URL registered before it) shows it on its next registration;
 * after that, never again. Lock: the upsert's row lock, and the `secret_revealed = false` condition
 * re-checked on the newest row version, so two concurrent calls reveal a secret at most once.
 */
export async function registerWebhook(q: Queryable, url: string): Promise<string | null> {
  const rows = await q.query<{ secret: string }>(
    `INSERT INTO webhooks (url, created_at, secret, secret_revealed) VALUES ($1, svc_now(), $2, true)
     ON CONFLICT (url) DO UPDATE SET secret_revealed = true WHERE webhooks.secret_revealed = false
     RETURNING secret`,
    [url, newEndpointSecret()],
  );
  return rows[0]?.secret ?? null;
}

/** Registered URLs in registration order (keyset on seq, as listDeadLetters). */
export async function listWebhooks(q: Queryable, after: bigint | null = null, limit?: number): Promise<Array<{ url: string; seq: string }>> {
  return q.query<{ url: string; seq: string }>(
    `SELECT url, seq::text AS seq FROM webhooks WHERE seq > $1 ORDER BY seq${limit === undefined ? '' : ' LIMIT $2'}`,
    limit === undefined ? [(after ?? 0n).toString()] : [(after ?? 0n).toString(), limit + 1],
  );
}

/**
 * Unregisters a URL and drops its pending deliveries in one transaction; false when it was not
 * registered. A state change committing at the same moment may already have queued its events for
 * the URL (its fan-out read the registration before this commit); those are still delivered once.
 */
export async function unregisterWebhook(db: Db, url: string): Promise<boolean> {
  return db.tx(async (tx) => {
    const gone = await tx.query('DELETE FROM webhooks WHERE url = $1 RETURNING url', [url]);
    if (gone.length === 0) return false;
    // Row locks on the URL's outbox rows: a row in flight on another instance is deleted once its
    // claim statement ends (a few ms); that sender's result then matches no row and changes nothing.
    await tx.query('DELETE FROM outbox WHERE url = $1', [url]);
    return true;
  });
}

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();

/**
 * Dead letters oldest first (keyset on seq: after the `after` key, at most `limit` + 1 rows so the
 * caller can tell whether another page exists), each event rebuilt exactly as it was sent.
 */
export async function listDeadLetters(q: Queryable, after: bigint | null = null, limit?: number): Promise<Array<DeadLetter & { seq: string }>> {
  const rows = await q.query(
    `SELECT d.id, d.url, d.escrow_id, d.attempts, d.last_error, d.last_status, d.first_attempt_at, d.dead_at,
            t.event, t.at, t.body, e.metadata, d.seq::text AS seq
       FROM dead_letters d JOIN trail_entries t ON t.escrow_id = d.escrow_id AND t.idx = d.idx
       LEFT JOIN escrows e ON e.id = d.escrow_id
      WHERE d.seq > $1
      ORDER BY d.seq${limit === undefined ? '' : ' LIMIT $2'}`,
    limit === undefined ? [(after ?? 0n).toString()] : [(after ?? 0n).toString(), limit + 1],
  );
  return rows.map((r) => ({
    id: r.id,
    url: r.url,
    event: engineEvent(r.escrow_id, { event: r.event, at: r.at, body: JSON.parse(r.body), metadata: r.metadata ? JSON.parse(r.metadata) : null }),
    attempts: Number(r.attempts),
    lastError: r.last_error,
    ...(r.last_status !== null && r.last_status !== undefined ? { lastStatus: Number(r.last_status) } : {}),
    firstAttemptAt: iso(r.first_attempt_at),
    deadAt: iso(r.dead_at),
    seq: r.seq,
  }));
}

/**
 * Puts a dead letter's event back in the outbox for its URL with a fresh attempt count (CONTRACT §7);
 * false when the id is unknown. The dead letter moves: it leaves the list, and a new one appears if
 * the redelivery fails again. Lock: the DELETE's row lock — two concurrent redeliveries of one id
 * serialise on it and only the first finds the row, so the event is queued once.
 */
export async function redeliverDeadLetter(q: Queryable, id: string): Promise<boolean> {
  const rows = await q.query(
    `WITH d AS (DELETE FROM dead_letters WHERE id = $1 RETURNING escrow_id, idx, url)
     INSERT INTO outbox (escrow_id, idx, url) SELECT escrow_id, idx, url FROM d RETURNING id::text AS id`,
    [id],
  );
  return rows.length === 1;
}

export const newDeadLetterId = () => newId('dlr');
