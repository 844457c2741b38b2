// Who is calling: the root key (API_KEY), a minted bearer key, or nobody (SPEC part 5).
import { AppError } from '../errors.ts';
import { sha256, sha256Hex } from '../crypto/hash.ts';
import { timingSafeEqual, utf8 } from '../crypto/bytes.ts';
import type { Services } from '../services.ts';
import type { Caller, RouteDef } from './route.ts';

/** Prefix of minted secrets, so a leaked one is recognisable in logs and scanners. */
export const SECRET_PREFIX = 'esk_';

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
    if (def.access === 'root') throw new AppError('forbidden', 'admin routes need the root key, and this deployment has no API_KEY configured');
    return caller;
  }
  const token = bearer(request);
  if (!token) throw unauthorized(false);
  // Constant time: compare fixed-length digests, so neither length nor prefix leaks.
  if (timingSafeEqual(sha256(utf8(token)), sha256(utf8(apiKey)))) return { ...caller, keyId: 'root' };
  if (token.startsWith(SECRET_PREFIX)) {
    const rows = await svc.db.query<{ id: string; rate_limit_max: number | null }>(
      'SELECT id, rate_limit_max FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL',
      [sha256Hex(token)],
    );
    if (rows.length === 1) {
      if (def.access === 'root') throw new AppError('forbidden', 'this admin route needs the root key; minted keys cannot use it');
      return { ...caller, keyId: rows[0].id, rateLimitMax: rows[0].rate_limit_max ?? undefined };
    }
  }
  throw unauthorized(true);
}
