// The service's own keys: issuer key eras and the webhook key (docs/keys.md). Their private halves
// live outside the database (a file, a PKCS#11 token, the sandbox's DATA_DIR/keys, or this process's
// memory); service_keys keeps each key's public half, its era, and the source that names it, so every
// instance finds the active key and none can take a key from a copy of the database.
import { toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import type { WebhookSigningKeys } from '../webhooks/keyring.ts';
import { verify } from '@escrow-settlement/protocol/crypto/ed25519';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import type { IssuerKey } from '@escrow-settlement/protocol/types';
import { issuerKeyId } from '../crypto/ids.ts';
import { createSigner, type Signer } from '../crypto/signer.ts';
import type { Queryable } from '../db/types.ts';
import { ConfigError } from '../errors.ts';
import type { HeadKeys, HeadSigner } from '../tlog/keys.ts';

export type { IssuerKey, Signer };

export type Purpose = 'issuer' | 'webhook';

/** A key this process can sign with, and where it came from. */
export interface LoadedKey {
  /** The one face the core signs through: the public key and sign(bytes), wherever the secret is. */
  signer: Signer;
  /** `file:…` or `pkcs11:…` as ISSUER_KEY would say; null for a key held only in memory. */
  source: string | null;
  /** A signed-note key's name (docs/keys.md: the issuer's must be LOG_ORIGIN). */
  name?: string;
}

/** How a source is loaded: for the operator (start-up, stored eras) or for a request (a rotation's body). */
export interface LoadOptions {
  /**
   * The source came in a request: a refusal of a key file names the rules it must meet, never which
   * one a path broke, so an answer tells nothing about paths the caller could not read (docs/keys.md "Key files").
   */
  request?: boolean;
}

/** How an edge turns a source into a key, and makes a new one (the Node edge: src/node/serviceKeys.ts). */
export interface KeySources {
  /** Loads `source` by the start-up rules; failures are ConfigError naming `variable`. */
  load(source: string, variable: string, opts?: LoadOptions): Promise<LoadedKey>;
  /**
   * A new key for a rotation without a source, present only where the keys are generated rather than
   * named (the sandbox: the Node edge writes it to DATA_DIR/keys/, or keeps it in memory for :memory:).
   */
  generate?(purpose: Purpose): Promise<LoadedKey>;
}

/** An edge without key files (tests, Deno without sources): keys in memory, no source loads. */
export const memoryKeySources: KeySources = {
  async load(_source, variable) {
    throw new ConfigError(variable, 'this edge cannot load key sources');
  },
  async generate() {
    return memoryKey();
  },
};

/** A fresh Ed25519 key held in this process's memory only (DATA_DIR=:memory:). */
export function memoryKey(): LoadedKey {
  const seed = crypto.getRandomValues(new Uint8Array(32));
  return { signer: createSigner(seed), source: null };
}

export const keyIdOf = (purpose: Purpose, publicKey: Uint8Array): string =>
  purpose === 'issuer' ? issuerKeyId(publicKey) : `whk_${sha256Hex(publicKey).slice(0, 16)}`;

/**
 * Checks that a key signs and that its signature verifies under the public key it claims (a token
 * object whose public half was mislabelled, a broken module): throws naming `variable`.
 */
export function checkSigns(key: LoadedKey, variable: string): void {
  const probe = utf8(`escrow-settlement key check ${Date.now()}`);
  let sig: Uint8Array;
  try {
    sig = key.signer.sign(probe);
  } catch (err) {
    throw new ConfigError(variable, `the key does not sign (${(err as Error).message})`);
  }
  if (!(sig instanceof Uint8Array) || sig.length !== 64 || !verify(sig, probe, key.signer.publicKey))
    throw new ConfigError(variable, 'the key signs, but its signatures do not verify under its public key');
}

/** A signed-note issuer key must be named as the log's origin (docs/keys.md): throws naming `variable`. */
export function checkName(key: LoadedKey, logOrigin: string, variable: string): void {
  if (key.name !== undefined && key.name !== logOrigin)
    throw new ConfigError(
      variable,
      `the signed-note key is named ${key.name}, but the log's origin (LOG_ORIGIN) is ${logOrigin}: an issuer key's name must be the origin`,
    );
}

// Keys this process holds, by public key hex. A key id names one key pair for good, so holding is
// process-wide: two apps in one process (tests) that share a database share its keys.
const held = new Map<string, Signer>();
let sources: KeySources = memoryKeySources;

/** This process's way to load an era's source when another instance rotated to it (set by the edge). */
export function useKeySources(s: KeySources): void {
  sources = s;
}

export function holdKey(key: LoadedKey): void {
  held.set(toHex(key.signer.publicKey), key.signer);
}

const purposeOf = (row: { key_id: string }): Purpose => (row.key_id.startsWith('whk_') ? 'webhook' : 'issuer');

type KeyRow = { key_id: string; public_key: string; source: string | null; valid_from: Date; valid_until: Date | null };
const KEY_COLS = 'key_id, public_key, source, valid_from, valid_until';

const toIssuerKey = (r: KeyRow): IssuerKey => ({
  keyId: r.key_id,
  alg: 'ed25519',
  publicKey: r.public_key,
  validFrom: r.valid_from.toISOString(),
  ...(r.valid_until ? { validUntil: r.valid_until.toISOString() } : {}),
});

/** The active key of a purpose as published (public half and era). */
export async function activeKey(q: Queryable, purpose: Purpose): Promise<IssuerKey> {
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE purpose = $1 AND valid_until IS NULL`, [purpose]);
  if (rows.length !== 1) throw new Error(`no active ${purpose} key: ensureKeys() has not run`);
  return toIssuerKey(rows[0]);
}

/** The active issuer key's id as a scalar subquery, for statements that need it without a round trip. */
export const ACTIVE_ISSUER_SQL = `SELECT key_id FROM service_keys WHERE purpose = 'issuer' AND valid_until IS NULL`;

export interface IssuerSigner extends HeadSigner {
  /** The key as published (GET /v1/issuer). */
  validFrom: string;
}

/**
 * The signer of a held key, or of the key its era's source names (loaded once and held): how an
 * instance signs with a key another instance rotated to. Throws when neither works.
 */
async function signerOf(row: KeyRow, variable: string): Promise<Signer> {
  const hit = held.get(row.public_key);
  if (hit) return hit;
  if (!row.source)
    throw new Error(`key ${row.key_id} is held by no source this process can load (it was kept in another process's memory)`);
  let key: LoadedKey;
  try {
    key = await sources.load(row.source, variable);
  } catch (err) {
    // A row anyone with write access to the database could have written: refused sources (a pkcs11:
    // URI naming a module, a file outside the rules, docs/keys.md) are said so, for the operator's log.
    if (err instanceof ConfigError)
      throw new Error(`${purposeOf(row)} key ${row.key_id}: its stored source is refused, nothing was loaded (${err.message})`);
    throw err;
  }
  if (toHex(key.signer.publicKey) !== row.public_key)
    throw new Error(`key ${row.key_id}: ${row.source} now holds another key (${keyIdOf(purposeOf(row), key.signer.publicKey)})`);
  holdKey(key);
  return key.signer;
}

/**
 * Signers by key id. A key id names one key pair for good, so the material never goes stale; which
 * key is *active* is read from the database in the statement that needs it (ACTIVE_ISSUER_SQL), so
 * a rotation reaches every instance at its next statement.
 */
const signers = new Map<string, IssuerSigner>();

export async function issuerSigner(q: Queryable, keyId: string): Promise<IssuerSigner> {
  const hit = signers.get(keyId);
  if (hit) return hit;
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE key_id = $1 AND purpose = 'issuer'`, [keyId]);
  if (rows.length !== 1) throw new Error(`no issuer key ${keyId}`);
  const signer = await signerOf(rows[0], 'ISSUER_KEY');
  const s: IssuerSigner = { keyId, publicKey: rows[0].public_key, validFrom: rows[0].valid_from.toISOString(), sign: signer.sign };
  if (signers.size > 1000) signers.clear();
  signers.set(keyId, s);
  return s;
}

/** A webhook key that signs deliveries, and for a retired one how long it still does (wall-clock ms). */
export type { WebhookSigningKey, WebhookSigningKeys } from '../webhooks/keyring.ts';

/**
 * The webhook keys that sign deliveries while `activePublicKey` is active: it, and every retired
 * webhook era whose validUntil is less than `overlapSeconds` ago on the service clock (docs/keys.md
 * "Webhook key rotation"). Each is held, or loaded from the source its era records (another
 * instance rotated to it), as issuer keys are. Throws when the active key cannot be loaded.
 */
export async function webhookSigningKeys(q: Queryable, activePublicKey: string, overlapSeconds: number): Promise<WebhookSigningKeys> {
  const rows = await q.query<KeyRow & { left_ms: number | null }>(
    `SELECT ${KEY_COLS},
            CASE WHEN valid_until IS NULL THEN NULL
                 ELSE extract(epoch FROM (valid_until + $2 * interval '1 second' - svc_now())) * 1000 END::float8 AS left_ms
       FROM service_keys
      WHERE purpose = 'webhook' AND (public_key = $1 OR (valid_until IS NOT NULL AND valid_until + $2 * interval '1 second' > svc_now()))
      ORDER BY seq DESC`,
    [activePublicKey, overlapSeconds],
  );
  const now = Date.now();
  const activeRow = rows.find((r) => r.public_key === activePublicKey);
  if (!activeRow) throw new Error(`the webhook key ${activePublicKey} is not an era of this database`);
  const active = { publicKey: activeRow.public_key, signer: await signerOf(activeRow, 'WEBHOOK_KEY') };
  const previous: WebhookSigningKeys['previous'] = [];
  const unavailable: string[] = [];
  for (const r of rows) {
    if (r === activeRow) continue;
    try {
      previous.push({ publicKey: r.public_key, signer: await signerOf(r, 'WEBHOOK_KEY'), untilMs: now + Number(r.left_ms) });
    } catch (err) {
      unavailable.push(`${r.key_id}: ${(err as Error).message}`);
    }
  }
  return { active, previous, unavailable };
}

/** Every webhook key era, oldest first, the last one active (listed in the issuer document). */
export async function webhookKeys(q: Queryable): Promise<IssuerKey[]> {
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE purpose = 'webhook' ORDER BY seq`);
  return rows.map(toIssuerKey);
}

/** How the log signs its heads: with the active issuer key (docs/protocol.md §12.4). */
export const issuerHeadKeys: HeadKeys = { activeKeyIdSql: ACTIVE_ISSUER_SQL, signer: issuerSigner };

/** Every issuer key era, oldest first (docs/protocol.md §11.2: the last one signs today). */
export async function issuerKeys(q: Queryable): Promise<IssuerKey[]> {
  const rows = await q.query<KeyRow>(`SELECT ${KEY_COLS} FROM service_keys WHERE purpose = 'issuer' ORDER BY seq`);
  return rows.map(toIssuerKey);
}

/**
 * Retires the active issuer key and makes `key` active, atomically, for every instance (each loads
 * it from its source at its next signature). The caller has loaded it and checked that it signs.
 */
/** The same for the webhook key: the retired one keeps signing beside it for WEBHOOK_KEY_OVERLAP_SECONDS. */
export const rotateWebhook = (db: TxDb, key: LoadedKey = memoryKey()): Promise<{ active: IssuerKey; retired: IssuerKey }> =>
  rotateKey(db, 'webhook', key);

export const rotateIssuer = (db: TxDb, key: LoadedKey = memoryKey()): Promise<{ active: IssuerKey; retired: IssuerKey }> =>
  rotateKey(db, 'issuer', key);

type TxDb = { tx<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> };

/**
 * Retires the active key of `purpose` and makes `key` active, atomically, for every instance. A key
 * that is already an era of either purpose is refused (ConfigError naming `key`): the issuer and
 * webhook keys differ, and an era names one key pair for good (docs/keys.md "Rotation").
 */
export async function rotateKey(db: TxDb, purpose: Purpose, key: LoadedKey): Promise<{ active: IssuerKey; retired: IssuerKey }> {
  const publicKey = toHex(key.signer.publicKey);
  const keyId = keyIdOf(purpose, key.signer.publicKey);
  holdKey(key);
  return db.tx(async (tx) => {
    // Lock: a transaction-scoped advisory lock per schema, held to commit, so concurrent rotations
    // (of either key: one key must never become both) run one after the other. A row lock alone is
    // not enough: the second rotation, once granted the row, re-checks `valid_until IS NULL` on the
    // key the first retired, retires nothing, and its insert breaks service_keys_one_active. After
    // the advisory lock, READ COMMITTED statements see the first rotation's commit, so the second
    // retires the key the first made.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':issuer-rotate'))`);
    const known = await tx.query<{ key_id: string; purpose: Purpose; active: boolean }>(
      'SELECT key_id, purpose, valid_until IS NULL AS active FROM service_keys WHERE public_key = $1',
      [publicKey],
    );
    if (known.length > 0) {
      const k = known[0];
      throw new ConfigError(
        'key',
        k.purpose !== purpose
          ? `that key is ${k.active ? 'the' : 'a former'} ${k.purpose} key of this service (${k.key_id}): the issuer and webhook keys must differ; give a new key`
          : `that key is already an era of this service (${k.key_id}); give a new key`,
      );
    }
    const [old] = await tx.query<KeyRow>(
      `UPDATE service_keys SET valid_until = svc_now() WHERE key_id = (
         SELECT key_id FROM service_keys WHERE purpose = $1 AND valid_until IS NULL FOR UPDATE)
       RETURNING ${KEY_COLS}`,
      [purpose],
    );
    const [fresh] = await tx.query<KeyRow>(
      `INSERT INTO service_keys (key_id, purpose, public_key, source, valid_from)
       VALUES ($1, $2, $3, $4, svc_now()) RETURNING ${KEY_COLS}`,
      [keyId, purpose, publicKey, key.source],
    );
    return { active: toIssuerKey(fresh), retired: toIssuerKey(old) };
  });
}
