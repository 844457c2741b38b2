// Idempotency-Key statements (docs/protocol.md, idempotency): a 2xx response is stored in the command's
// own transaction and replayed verbatim for 24 h. The key is claimed in that same transaction, so a
// request that dies never holds it. The header itself is read at the edge (src/http/idempotency.ts).
import { unprocessable } from '../errors.ts';
import type { Queryable, Stmt } from './types.ts';

export interface IdemSlot {
  scope: string;
  requestHash: string;
}

/** A stored answer met inside the command's transaction: the transaction rolls back and the answer replays. */
export class StoredAnswer extends Error {
  constructor(readonly response: Response) {
    super('idempotent replay');
  }
}

export type Row = { request_hash: string; status: number | null; body: string | null; headers: string | null };
export const FRESH = `SELECT request_hash, status, body, headers FROM idempotency
  WHERE scope = $1 AND status IS NOT NULL AND created_at > now() - interval '24 hours'`;

export function replay(row: Row, requestHash: string): Response {
  if (row.request_hash !== requestHash)
    throw unprocessable('this Idempotency-Key was already used with a different request body; use a new key');
  return new Response(row.body, { status: row.status!, headers: { ...JSON.parse(row.headers ?? '{}'), 'idempotent-replayed': 'true' } });
}

/**
 * The first statements of a command's transaction when it runs under a key. Lock: a
 * transaction-scoped advisory lock on the key's scope. A concurrent request with the same key waits
 * here until this transaction ends: on commit it finds the stored answer and replays it; on
 * rollback, or when the process holding it dies (Postgres ends the dead connection's transaction),
 * the lock is gone at once and the waiter runs. No pending row exists, so nothing is left to expire.
 */
export async function idemClaim(tx: Queryable, slot: IdemSlot | undefined): Promise<void> {
  if (!slot) return;
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [slot.scope]);
  const [row] = await tx.query<Row>(FRESH, [slot.scope]);
  if (row) throw new StoredAnswer(replay(row, slot.requestHash));
}

/** The statement a command adds to its transaction so the stored response commits with the effect. */
export function idemStore(slot: IdemSlot | undefined, status: number, body: unknown): Stmt[] {
  if (!slot) return [];
  return [
    {
      // Replaces an expired record of the same scope (or a pending row an older version left behind).
      text: `INSERT INTO idempotency (scope, request_hash, status, body, headers, created_at) VALUES ($1, $2, $3, $4, $5, now())
           ON CONFLICT (scope) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status, body = EXCLUDED.body,
             headers = EXCLUDED.headers, created_at = EXCLUDED.created_at`,
      params: [
        slot.scope,
        slot.requestHash,
        status,
        JSON.stringify(body),
        JSON.stringify({ 'content-type': 'application/json; charset=utf-8' }),
      ],
    },
  ];
}

/**
 * Deletes stored responses past their 24 h retention, a bounded batch at a time, so the table does
 * not grow without bound (keys are otherwise only cleared lazily when reused). Returns how many.
 */
export async function pruneIdempotency(
  db: { query: (text: string, params?: unknown[]) => Promise<unknown[]> },
  batch = 1000,
): Promise<number> {
  const rows = await db.query(
    `DELETE FROM idempotency WHERE scope IN (
       SELECT scope FROM idempotency WHERE created_at < now() - interval '24 hours' LIMIT $1)
     RETURNING scope`,
    [batch],
  );
  return rows.length;
}
