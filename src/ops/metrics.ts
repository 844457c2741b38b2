// The operator's metrics page (docs/protocol.md §22): database counts plus this process's counters.
import type { Queryable } from '../db/types.ts';
import type { Services } from '../services.ts';
import { webhookMetrics, type WebhookMetrics } from '../webhooks/metrics.ts';
import type { EscrowState } from '../escrow/states.ts';
import { formatAmount } from '../units/amounts.ts';

export interface Metrics {
  escrows: { total: number; byState: Record<EscrowState, number> };
  proofs: { issued: number };
  /** Refunds after release (docs/protocol.md §24.4): how many, and their total (an amount string). */
  refunds: { afterRelease: number; total: string };
  log: { size: number };
  webhooks: WebhookMetrics;
  rateLimit: { rejected: number };
  apiKeys: { active: number; revoked: number };
  requestLog: { lines: number; rotations: number };
  uptimeSeconds: number;
  version: string;
}

/** Every state, so byState has a stable shape: a state no escrow is in shows 0. */
const STATES: EscrowState[] = ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'];

type CountRow = {
  by_state: string;
  proofs: number;
  log_size: number;
  keys_active: number;
  keys_revoked: number;
  refunds: number;
  refunded: string;
};

/**
 * Counts from the database, read in one statement so they describe one snapshot. Counts are cast to
 * float8 in SQL: int8 would come back as a number from PGlite and a string from postgres.js, and
 * float8 is exact far beyond any count this service reaches. byState travels as JSON text for the
 * same reason (both drivers hand text back untouched).
 */
async function databaseCounts(q: Queryable): Promise<CountRow> {
  const [row] = await q.query<CountRow>(
    `SELECT (SELECT coalesce(json_object_agg(state, n), '{}')::text
               FROM (SELECT state, count(*) AS n FROM escrows GROUP BY state) s) AS by_state,
            (SELECT count(*) FROM proofs)::float8 AS proofs,
            (SELECT size FROM log_state WHERE id = 1)::float8 AS log_size,
            (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL)::float8 AS keys_active,
            (SELECT count(*) FROM api_keys WHERE revoked_at IS NOT NULL)::float8 AS keys_revoked,
            (SELECT count(*) FROM refunds)::float8 AS refunds,
            (SELECT coalesce(sum(amount), 0) FROM refunds)::text AS refunded`,
  );
  return row;
}

export async function metrics(svc: Services): Promise<Metrics> {
  // The webhook counters are the webhook module's to define (src/webhooks/metrics.ts).
  const [row, webhooks] = await Promise.all([databaseCounts(svc.db), webhookMetrics(svc.db)]);
  const states = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<EscrowState, number>;
  let total = 0;
  for (const [state, n] of Object.entries(JSON.parse(row.by_state) as Record<string, number>)) {
    states[state as EscrowState] = n;
    total += n;
  }
  const log = svc.requestLogStats();
  return {
    escrows: { total, byState: states },
    proofs: { issued: row.proofs },
    refunds: { afterRelease: row.refunds, total: formatAmount(BigInt(row.refunded)) },
    log: { size: row.log_size },
    webhooks,
    rateLimit: { rejected: svc.rateLimiter.rejected },
    apiKeys: { active: row.keys_active, revoked: row.keys_revoked },
    requestLog: { lines: log.lines, rotations: log.rotations },
    uptimeSeconds: Math.floor((svc.nowMs() - svc.startedAt) / 1000),
    version: svc.version,
  };
}
