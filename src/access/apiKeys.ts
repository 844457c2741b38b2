// Minted bearer keys (docs/protocol.md §18.2): the secret is shown once and stored only as its sha256.
import { toBase64 } from '@escrow-settlement/protocol/crypto/bytes';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { newId } from '../crypto/ids.ts';
import type { Queryable } from '../db/types.ts';
import { AppError, notFound } from '../errors.ts';
import type { ApiKeyRecord, MintedKey } from '@escrow-settlement/protocol/resources';

// A key record as the admin listing shows it: never the secret, never its hash (docs/protocol.md §18.2).
export type { ApiKeyRecord, MintedKey };

/** Prefix of minted secrets, so a leaked one is recognisable in logs and scanners. */
export const SECRET_PREFIX = 'esk_';

/** Bytes of randomness in a secret: 256 bits, so guessing is hopeless and one sha256 suffices to store it. */
const SECRET_BYTES = 32;

type KeyRow = { id: string; label: string | null; rate_limit_max: number | null; created_at: Date; revoked_at: Date | null };
const COLS = 'id, label, rate_limit_max, created_at, revoked_at';

const toRecord = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  label: r.label ?? '',
  createdAt: r.created_at.toISOString(),
  ...(r.revoked_at ? { revokedAt: r.revoked_at.toISOString() } : {}),
  ...(r.rate_limit_max !== null ? { rateLimitMax: r.rate_limit_max } : {}),
});

/** `esk_` + 32 random bytes in base64url (RFC 4648 §5, unpadded): recognisable in logs and secret scanners. */
export function newSecret(): string {
  const b64 = toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
  return SECRET_PREFIX + b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export async function mintKey(q: Queryable, opts: { label?: string; rateLimitMax?: number }): Promise<MintedKey> {
  const secret = newSecret();
  const [row] = await q.query<KeyRow>(
    `INSERT INTO api_keys (id, label, secret_hash, rate_limit_max, created_at) VALUES ($1, $2, $3, $4, svc_now())
     RETURNING ${COLS}`,
    [newId('key'), opts.label ?? '', sha256Hex(secret), opts.rateLimitMax ?? null],
  );
  const rec = toRecord(row);
  return {
    id: rec.id,
    label: rec.label,
    secret,
    createdAt: rec.createdAt,
    ...(rec.rateLimitMax !== undefined ? { rateLimitMax: rec.rateLimitMax } : {}),
  };
}

/**
 * Minted keys, oldest first (keyset on seq: after the `after` key, at most `limit` + 1 rows so the
 * caller can tell whether another page exists); the root key (API_KEY) is configuration, not a
 * record, so it is not listed.
 */
export async function listKeys(
  q: Queryable,
  after: bigint | null = null,
  limit?: number,
): Promise<Array<{ record: ApiKeyRecord; seq: string }>> {
  const rows = await q.query<KeyRow & { seq: string }>(
    `SELECT ${COLS}, seq::text AS seq FROM api_keys WHERE seq > $1 ORDER BY seq${limit === undefined ? '' : ' LIMIT $2'}`,
    limit === undefined ? [(after ?? 0n).toString()] : [(after ?? 0n).toString(), limit + 1],
  );
  return rows.map((r) => ({ record: toRecord(r), seq: r.seq }));
}

/**
 * Revokes a key. Idempotent: a second revocation keeps the first revokedAt. Takes effect on the next
 * request on every instance: the revocation generation it bumps is read by that request's rate-limit
 * statement, and a cached key is verified again when it moved (src/access/authCache.ts).
 */
export async function revokeKey(q: Queryable, id: string): Promise<ApiKeyRecord> {
  // docs/protocol.md §18.2: the root key cannot be revoked through the API; it is the deployment's API_KEY.
  if (id === 'root')
    throw new AppError('forbidden', "the root key is the deployment's API_KEY and cannot be revoked here; change API_KEY and restart");
  // Row lock on this key for the statement: a concurrent revocation waits, then keeps this revokedAt.
  // The same statement bumps the revocation generation, which every instance reads with each
  // request's rate-limit statement, so cached authentications are re-checked (src/access/authCache.ts).
  const [row] = await q.query<KeyRow>(
    `WITH r AS (UPDATE api_keys SET revoked_at = COALESCE(revoked_at, svc_now()) WHERE id = $1 RETURNING ${COLS}),
          g AS (UPDATE api_key_generation SET gen = gen + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM r) RETURNING gen)
     SELECT r.*, (SELECT count(*) FROM g) AS bumped FROM r`,
    [id],
  );
  if (!row) throw notFound(`no API key with id ${id}`);
  return toRecord(row);
}
