// Idempotency-Key on create and fund (CONTRACT §3): scope (credential, method, path, key); a 2xx
// response is stored in the command's own transaction and replayed verbatim for 24 h.
import { AppError, badRequest, unprocessable } from '../errors.ts';
import { sha256Hex } from '../crypto/hash.ts';
import { canonicalize } from '../crypto/jcs.ts';
import type { Stmt } from '../db/types.ts';
import type { Ctx } from './route.ts';

export interface IdemSlot {
  scope: string;
}

const RETENTION_MS = 24 * 3600 * 1000;
/** A pending key older than this belongs to a request that died before committing: take it over. */
const STALE_PENDING_MS = 60_000;
const POLL_MS = 25;

/** The statement a command adds to its transaction so the stored response commits with the effect. */
export function idemStore(slot: IdemSlot | undefined, status: number, body: unknown): Stmt[] {
  if (!slot) return [];
  return [{
    text: 'UPDATE idempotency SET status = $2, body = $3, headers = $4 WHERE scope = $1',
    params: [slot.scope, status, JSON.stringify(body), JSON.stringify({ 'content-type': 'application/json; charset=utf-8' })],
  }];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `run` at most once per key. Without the header it simply runs. The first request inserts a
 * pending row (the primary key is the lock); concurrent duplicates wait for it to complete and
 * replay it; a different body under the same key is 422; a failure (non-2xx) frees the key.
 */
export async function withIdempotency(ctx: Ctx, body: unknown, run: (slot?: IdemSlot) => Promise<Response>): Promise<Response> {
  const key = ctx.request.headers.get('idempotency-key');
  if (key === null) return run();
  if (key.length === 0 || key.length > 255) throw badRequest('Idempotency-Key must be 1 to 255 characters');
  const url = new URL(ctx.request.url);
  const scope = [ctx.caller.keyId ?? 'open', ctx.request.method, url.pathname, key].join('\n');
  let requestHash: string;
  try {
    requestHash = sha256Hex(body === undefined ? '' : canonicalize(body));
  } catch {
    throw badRequest('request body cannot be canonicalised (RFC 8785): lone surrogates or non-finite numbers');
  }
  const db = ctx.svc.db;
  const deadline = ctx.svc.nowMs() + STALE_PENDING_MS + 5_000;
  for (;;) {
    const mine = await db.query(
      `INSERT INTO idempotency (scope, request_hash, created_at) VALUES ($1, $2, now())
       ON CONFLICT (scope) DO NOTHING RETURNING scope`,
      [scope, requestHash],
    );
    if (mine.length === 1) {
      let res: Response;
      try {
        res = await run({ scope });
      } catch (err) {
        await db.query('DELETE FROM idempotency WHERE scope = $1 AND status IS NULL', [scope]);
        throw err;
      }
      if (res.status < 200 || res.status > 299) await db.query('DELETE FROM idempotency WHERE scope = $1 AND status IS NULL', [scope]);
      return res;
    }
    const [row] = await db.query<{ request_hash: string; status: number | null; body: string | null; headers: string | null; age_ms: string }>(
      `SELECT request_hash, status, body, headers, (extract(epoch FROM now() - created_at) * 1000)::bigint::text AS age_ms
         FROM idempotency WHERE scope = $1`,
      [scope],
    );
    if (!row) continue; // freed by a failed first attempt: try to take it
    const age = Number(row.age_ms);
    if (age > RETENTION_MS || (row.status === null && age > STALE_PENDING_MS)) {
      await db.query('DELETE FROM idempotency WHERE scope = $1 AND request_hash = $2 AND status IS NOT DISTINCT FROM $3', [scope, row.request_hash, row.status]);
      continue;
    }
    if (row.request_hash !== requestHash) {
      throw unprocessable('this Idempotency-Key was already used with a different request body; use a new key');
    }
    if (row.status !== null) {
      return new Response(row.body, {
        status: row.status,
        headers: { ...JSON.parse(row.headers ?? '{}'), 'idempotent-replayed': 'true' },
      });
    }
    if (ctx.svc.nowMs() > deadline) throw new AppError('unavailable', 'a request with this Idempotency-Key is still in progress; retry later');
    await sleep(POLL_MS);
  }
}

/**
 * Deletes stored responses past their 24 h retention, a bounded batch at a time, so the table does
 * not grow without bound (keys are otherwise only cleared lazily when reused). Returns how many.
 */
export async function pruneIdempotency(db: { query: (text: string, params?: unknown[]) => Promise<unknown[]> }, batch = 1000): Promise<number> {
  const rows = await db.query(
    `DELETE FROM idempotency WHERE scope IN (
       SELECT scope FROM idempotency WHERE created_at < now() - interval '24 hours' LIMIT $1)
     RETURNING scope`,
    [batch],
  );
  return rows.length;
}
