// Webhook delivery counters for GET /v1/admin/metrics (docs/protocol.md §22).
import type { Queryable } from '../db/types.ts';

export interface WebhookMetrics {
  /** Events delivered (2xx), across every instance, since the database was created. */
  delivered: number;
  /** Failed attempts (each retry that failed counts, including the last one before a dead letter). */
  failed: number;
  /** Deliveries moved to the dead-letter list (a redelivery that fails again counts again). */
  deadLettered: number;
  /** Outbox rows waiting or in flight: one per (event, URL). */
  pending: number;
}

/** One statement, one snapshot. float8 casts: int8 is a number from PGlite and a string from postgres.js. */
export async function webhookMetrics(q: Queryable): Promise<WebhookMetrics> {
  const [r] = await q.query<{ delivered: number; failed: number; dead_lettered: number; pending: number }>(
    `SELECT w.delivered::float8 AS delivered, w.failed::float8 AS failed, w.dead_lettered::float8 AS dead_lettered,
            (SELECT count(*) FROM outbox)::float8 AS pending
       FROM webhook_counters w WHERE w.id = 1`,
  );
  return { delivered: Number(r.delivered), failed: Number(r.failed), deadLettered: Number(r.dead_lettered), pending: Number(r.pending) };
}
