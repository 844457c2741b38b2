// The Idempotency-Key header at the edge: scope it to (credential, method, path, key), replay a stored
// answer, or run the command with a slot it claims in its own transaction (src/db/idempotency.ts).
import { badRequest } from '../errors.ts';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { FRESH, type IdemSlot, replay, type Row, StoredAnswer } from '../db/idempotency.ts';
import type { Ctx } from './route.ts';

/**
 * Runs `run` at most once per key. Without the header it simply runs. A stored 2xx answer replays
 * (one read, outside any transaction); otherwise the command claims the key in its own transaction
 * (idemClaim) and stores its answer there (idemStore). A different body under the same key is 422;
 * a failure (a throw: the transaction rolled back) stores nothing, so the corrected retry runs.
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
  const [row] = await ctx.svc.db.query<Row>(FRESH, [scope]);
  if (row) return replay(row, requestHash);
  try {
    return await run({ scope, requestHash });
  } catch (err) {
    if (err instanceof StoredAnswer) return err.response;
    throw err;
  }
}
