// Who is calling: the root key (API_KEY), a minted bearer key, or nobody (docs/protocol.md §18.1, §18.2).
import { AppError } from '../errors.ts';
import { sha256, sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { timingSafeEqual, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import type { Services } from '../services.ts';
import type { Caller, RouteDef } from './route.ts';
import type { CachedKey } from '../access/authCache.ts';
import { SECRET_PREFIX } from '../access/apiKeys.ts';

function bearer(request: Request): string | null {
  const h = request.headers.get('authorization');
  if (!h) return null;
  const m = /^Bearer[ ]+(\S{1,512})\s*$/i.exec(h);
  return m ? m[1] : '';
}

// RFC 6750 §3: a 401 names the scheme; error="invalid_token" only when a bearer token was sent.
const unauthorized = (sent: boolean) =>
  new AppError('unauthorized', 'a valid bearer key is required: send Authorization: Bearer <key>', {
    headers: { 'WWW-Authenticate': sent ? 'Bearer realm="escrow-settlement", error="invalid_token"' : 'Bearer realm="escrow-settlement"' },
  });

/**
 * Resolves the caller for a route. Hosted mode (API_KEY set): 'key' and 'root' routes need a
 * bearer key; unknown and revoked keys get the same 401. Root routes: a minted key, or an open
 * sandbox, gets 403. Public routes ignore credentials entirely.
 */
export async function authenticate(def: RouteDef, request: Request, svc: Services, ip: string): Promise<Caller> {
  const caller: Caller = { keyId: null, ip };
  if (def.access === 'public') return caller;
  const apiKey = svc.config.apiKey;
  if (apiKey === undefined) {
    if (def.access === 'root')
      throw new AppError('forbidden', 'admin routes need the root key, and this deployment has no API_KEY configured');
    return caller;
  }
  const token = bearer(request);
  if (!token) throw unauthorized(false);
  // Constant time: compare fixed-length digests, so neither length nor prefix leaks.
  if (timingSafeEqual(sha256(utf8(token)), sha256(utf8(apiKey)))) return { ...caller, keyId: 'root' };
  if (token.startsWith(SECRET_PREFIX)) {
    const secretHash = sha256Hex(token);
    const key = svc.authCache.get(secretHash) ?? (await lookupKey(svc, secretHash));
    if (key) {
      if (def.access === 'root') throw new AppError('forbidden', 'this admin route needs the root key; minted keys cannot use it');
      return { ...caller, keyId: key.keyId, rateLimitMax: key.rateLimitMax, secretHash, generation: key.generation };
    }
  }
  throw unauthorized(true);
}

/**
 * Reads a minted key and the revocation generation in one statement (one snapshot), and caches a
 * live key under that generation (src/access/authCache.ts). Null for unknown and revoked keys.
 */
export async function lookupKey(svc: Services, secretHash: string): Promise<CachedKey | null> {
  const rows = await svc.db.query<{ id: string; rate_limit_max: number | null; gen: string }>(
    `SELECT k.id, k.rate_limit_max, g.gen::text AS gen FROM api_key_generation g
       LEFT JOIN api_keys k ON k.secret_hash = $1 AND k.revoked_at IS NULL WHERE g.id = 1`,
    [secretHash],
  );
  const r = rows[0];
  if (!r || r.id === null) {
    svc.authCache.delete(secretHash);
    return null;
  }
  const key: CachedKey = {
    keyId: r.id,
    ...(r.rate_limit_max !== null ? { rateLimitMax: r.rate_limit_max } : {}),
    generation: Number(r.gen),
  };
  svc.authCache.set(secretHash, key);
  return key;
}

/**
 * After the request's rate-limit statement: if it saw a newer revocation generation than the one
 * the caller's cached key was verified at, verify the key again; a revoked key is then 401.
 */
export async function recheckRevocation(svc: Services, caller: Caller, seenGeneration: number | undefined): Promise<void> {
  if (caller.secretHash === undefined) return;
  if (seenGeneration !== undefined && seenGeneration === caller.generation) return;
  const key = await lookupKey(svc, caller.secretHash);
  if (!key) throw unauthorized(true);
}
