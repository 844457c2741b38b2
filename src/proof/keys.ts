// The service's own keys: issuer key eras and the webhook signing key, kept in the database so
// every instance signs with the same key and a restart keeps them.
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { issuerKeyId } from '../crypto/ids.ts';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import type { Queryable } from '../db/types.ts';
import type { IssuerKey } from '@escrow-settlement/protocol/types';
import { createSigner } from '../crypto/signer.ts';
import type { HeadKeys, HeadSigner } from '../tlog/keys.ts';

export type { IssuerKey };

export interface SigningKey extends IssuerKey {
  secretKey: Uint8Array;
}

type KeyRow = { key_id: string; public_key: string; secret_key: string; valid_from: Date; valid_until: Date | null };

const toIssuerKey = (r: KeyRow): IssuerKey => ({
  keyId: r.key_id,
  alg: 'ed25519',
  publicKey: r.public_key,
  validFrom: r.valid_from.toISOString(),
  ...(r.valid_until ? { validUntil: r.valid_until.toISOString() } : {}),
});

function newKeyRow(purpose: 'issuer' | 'webhook') {
  const kp = generateKeyPair();
  const keyId = purpose === 'issuer' ? issuerKeyId(kp.publicKey) : `whk_${sha256Hex(kp.publicKey).slice(0, 16)}`;
  return { keyId, publicKey: toHex(kp.publicKey), secretKey: toHex(kp.secretKey) };
}

/**
 * Generates the issuer and webhook keys on first start. Two instances starting together both try;
 * the partial unique index (one active key per purpose) lets exactly one insert win.
 */
export async function ensureKeys(db: Queryable): Promise<void> {
  for (const purpose of ['issuer', 'webhook'] as const) {
    const k = newKeyRow(purpose);
    await db.query(
      `INSERT INTO service_keys (key_id, purpose, public_key, secret_key, valid_from)
       VALUES ($1, $2, $3, $4, svc_now())
       ON CONFLICT (purpose) WHERE valid_until IS NULL DO NOTHING`,
      [k.keyId, purpose, k.publicKey, k.secretKey],
    );
  }
}

const KEY_COLS = 'key_id, public_key, secret_key, valid_from, valid_until';

/** The active key of a purpose, read from the database each time so a rotation reaches every instance. */
export async function activeKey(q: Queryable, purpose: 'issuer' | 'webhook'): Promise<SigningKey> {
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE purpose = $1 AND valid_until IS NULL`, [purpose]);
  if (rows.length !== 1) throw new Error(`no active ${purpose} key: ensureKeys() has not run`);
  return { ...toIssuerKey(rows[0]), secretKey: fromHex(rows[0].secret_key, 'secret_key') };
}

/** The active issuer key's id as a scalar subquery, for statements that need it without a round trip. */
export const ACTIVE_ISSUER_SQL = `SELECT key_id FROM service_keys WHERE purpose = 'issuer' AND valid_until IS NULL`;

export interface IssuerSigner extends HeadSigner {
  /** The key as published (GET /v1/issuer). */
  validFrom: string;
}

/**
 * Signers by key id. A key id names one key pair for good (it is derived from the public key), so
 * the material never goes stale; which key is *active* is read from the database in the statement
 * that needs it (ACTIVE_ISSUER_SQL), so a rotation reaches every instance at its next statement.
 * The cache keeps the derived public half (createSigner), so signing never re-derives it.
 */
const signers = new Map<string, IssuerSigner>();

export async function issuerSigner(q: Queryable, keyId: string): Promise<IssuerSigner> {
  const hit = signers.get(keyId);
  if (hit) return hit;
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE key_id = $1 AND purpose = 'issuer'`, [keyId]);
  if (rows.length !== 1) throw new Error(`no issuer key ${keyId}`);
  const signer = createSigner(fromHex(rows[0].secret_key, 'secret_key'));
  const s: IssuerSigner = { keyId, publicKey: toHex(signer.publicKey), validFrom: rows[0].valid_from.toISOString(), sign: signer.sign };
  if (s.publicKey !== rows[0].public_key) throw new Error(`issuer key ${keyId}: stored public key does not match its secret`);
  if (signers.size > 1000) signers.clear();
  signers.set(keyId, s);
  return s;
}

/** How the log signs its heads: with the active issuer key (docs/protocol.md §12.4). */
export const issuerHeadKeys: HeadKeys = { activeKeyIdSql: ACTIVE_ISSUER_SQL, signer: issuerSigner };

/** Every issuer key era, oldest first (docs/protocol.md §11.2: the last one signs today). */
export async function issuerKeys(q: Queryable): Promise<IssuerKey[]> {
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE purpose = 'issuer' ORDER BY seq`);
  return rows.map(toIssuerKey);
}

/** Retires the active issuer key and makes a fresh one active, atomically. */
export async function rotateIssuer(db: {
  tx<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
}): Promise<{ active: IssuerKey; retired: IssuerKey }> {
  return db.tx(async (tx) => {
    // Lock: a transaction-scoped advisory lock per schema, held to commit, so concurrent rotations
    // run one after the other. A row lock alone is not enough: the second rotation, once granted
    // the row, re-checks `valid_until IS NULL` on the key the first retired, retires nothing, and
    // its insert breaks service_keys_one_active. After the advisory lock, READ COMMITTED statements
    // see the first rotation's commit, so the second retires the key the first made.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':issuer-rotate'))`);
    const [old] = await tx.query<KeyRow>(
      `UPDATE service_keys SET valid_until = svc_now() WHERE key_id = (
         SELECT key_id FROM service_keys WHERE purpose = 'issuer' AND valid_until IS NULL FOR UPDATE)
       RETURNING ${KEY_COLS}`,
    );
    const k = newKeyRow('issuer');
    const [fresh] = await tx.query<KeyRow>(
      `INSERT INTO service_keys (key_id, purpose, public_key, secret_key, valid_from)
       VALUES ($1, 'issuer', $2, $3, svc_now()) RETURNING ${KEY_COLS}`,
      [k.keyId, k.publicKey, k.secretKey],
    );
    return { active: toIssuerKey(fresh), retired: toIssuerKey(old) };
  });
}
