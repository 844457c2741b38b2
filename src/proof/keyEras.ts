// Start-up: the keys this process signs with against the eras the database records (docs/keys.md
// "Start-up"). An empty database takes them as its first eras; a database that knows other keys is
// refused, naming both key ids; a database an earlier version wrote, which still holds the private
// halves, is accepted only with the same keys configured, and then its secrets are erased, never before.
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { ConfigError } from '../errors.ts';
import type { Db, Queryable } from '../db/types.ts';
import {
  activeKey,
  checkSigns,
  holdKey,
  issuerSigner,
  keyIdOf,
  useKeySources,
  webhookSigningKeys,
  type KeySources,
  type LoadedKey,
  type Purpose,
} from './keys.ts';

export interface StartKeys {
  issuer: LoadedKey;
  webhook: LoadedKey;
  /**
   * The command that writes a database's stored secrets out as files, for the refusal's line
   * (the Node edge: `<how this service was started> keys export --out DIR`).
   */
  exportCommand?: string;
}

export interface EnsuredKeys {
  /** Eras this start wrote (an empty database). */
  created: Purpose[];
  /** Stored private keys erased by this start (a database of an earlier version). */
  erased: number;
}

const VARIABLE: Record<Purpose, string> = { issuer: 'ISSUER_KEY', webhook: 'WEBHOOK_KEY' };

type Row = { key_id: string; purpose: Purpose; public_key: string; has_secret: boolean; active: boolean };

// Lock: one transaction-scoped advisory lock per schema, so two instances starting on an empty
// database together do not both make a first era: the second sees the first's and is checked against it.
const LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':service-keys'))`;

/** Where a key came from, for a line an operator reads. */
const whence = (k: LoadedKey) => (k.source ? ` (${k.source})` : ' (held in memory)');

/**
 * The issuer and webhook keys must differ: one key for both would let a webhook signature stand for a
 * proof's, and the reverse (docs/keys.md "Two keys, never one"). Throws ConfigError naming WEBHOOK_KEY.
 * The edges call it as soon as both are loaded, before the database is opened; ensureKeys again.
 */
export function checkDistinct(keys: Pick<StartKeys, 'issuer' | 'webhook'>): void {
  if (toHex(keys.issuer.signer.publicKey) === toHex(keys.webhook.signer.publicKey))
    throw new ConfigError(
      'WEBHOOK_KEY',
      `names the same key as ISSUER_KEY${whence(keys.webhook)}: the issuer and webhook keys must differ (keys generate writes one of each)`,
    );
}

/**
 * Reconciles the configured (or generated) keys with the database's eras, holds them for signing,
 * and returns what it wrote. `sources` is the edge's loader for an era's source (files, PKCS#11):
 * without it only the held keys sign. Throws ConfigError naming the variable on every refusal.
 */
export async function ensureKeys(db: Db, keys: StartKeys, sources?: KeySources): Promise<EnsuredKeys> {
  for (const p of ['issuer', 'webhook'] as const) checkSigns(keys[p], VARIABLE[p]);
  checkDistinct(keys);
  const result = await db.tx(async (tx) => {
    await tx.query(LOCK_SQL);
    const rows = await tx.query<Row>(
      `SELECT key_id, purpose, public_key, secret_key IS NOT NULL AS has_secret, valid_until IS NULL AS active
         FROM service_keys WHERE purpose IN ('issuer', 'webhook') ORDER BY seq`,
    );
    const active = (p: Purpose) => rows.find((r) => r.purpose === p && r.active);
    const pub = (p: Purpose) => toHex(keys[p].signer.publicKey);
    if (rows.some((r) => r.has_secret)) return { created: [], erased: await eraseLegacy(tx, keys, active) };
    const created: Purpose[] = [];
    for (const p of ['issuer', 'webhook'] as const) {
      const now = active(p);
      if (!now) {
        await tx.query(`INSERT INTO service_keys (key_id, purpose, public_key, source, valid_from) VALUES ($1, $2, $3, $4, svc_now())`, [
          keyIdOf(p, keys[p].signer.publicKey),
          p,
          pub(p),
          keys[p].source,
        ]);
        created.push(p);
        continue;
      }
      // Any era of its purpose: an instance restarted after a rotation signs with the active era,
      // loaded from its source (docs/keys.md "Rotation", "Webhook key rotation").
      const known = rows.some((r) => r.purpose === p && r.public_key === pub(p));
      if (!known)
        throw new ConfigError(
          VARIABLE[p],
          `key ${keyIdOf(p, keys[p].signer.publicKey)}${whence(keys[p])} is not ${p === 'issuer' ? 'an issuer' : 'a webhook'} key era of this database, whose ${p} key is ${now.key_id}: every instance on one database signs with the same keys (is this a second instance configured with other keys?)`,
        );
    }
    return { created, erased: 0 };
  });
  holdKey(keys.issuer);
  holdKey(keys.webhook);
  // A restart after a rotation: the active era may be another key, loaded from the source its era
  // records through the edge's loader (registered here, before the app is made); load it now, so a
  // source this instance cannot read stops the start instead of the first closing.
  if (sources) useKeySources(sources);
  const [activeIssuer] = await db.query<{ key_id: string; source: string | null }>(
    `SELECT key_id, source FROM service_keys WHERE purpose = 'issuer' AND valid_until IS NULL`,
  );
  try {
    await issuerSigner(db, activeIssuer.key_id);
  } catch (err) {
    throw new ConfigError(
      'ISSUER_KEY',
      `the active issuer key ${activeIssuer.key_id} cannot be loaded here (${(err as Error).message}); name it in ISSUER_KEY or make its source readable`,
    );
  }
  const webhook = await activeKey(db, 'webhook');
  try {
    await webhookSigningKeys(db, webhook.publicKey, 0);
  } catch (err) {
    throw new ConfigError(
      'WEBHOOK_KEY',
      `the active webhook key ${webhook.keyId} cannot be loaded here (${(err as Error).message}); name it in WEBHOOK_KEY or make its source readable`,
    );
  }
  return result;
}

/**
 * A database that still holds private keys: start only with the same active keys configured (each
 * already checked to sign), then erase every stored secret in this transaction and record where
 * the active keys now live. Otherwise refuse, naming the command that writes them out.
 */
async function eraseLegacy(tx: Queryable, keys: StartKeys, active: (p: Purpose) => Row | undefined): Promise<number> {
  const mismatch = (['issuer', 'webhook'] as const).find((p) => active(p)?.public_key !== toHex(keys[p].signer.publicKey));
  if (mismatch) {
    const how = keys.exportCommand ?? 'keys export --out DIR';
    throw new ConfigError(
      VARIABLE[mismatch],
      `this database still holds the service's private keys (written by an earlier version) and ${VARIABLE[mismatch]} does not name its ${mismatch} key ${active(mismatch)?.key_id ?? '(none)'}: run \`${how}\` to write them out as 0600 files, then start with ISSUER_KEY=file:DIR/issuer.key WEBHOOK_KEY=file:DIR/webhook.key; the service erases them from the database once it signs with them`,
    );
  }
  const erased = await tx.query<{ key_id: string }>(
    `UPDATE service_keys SET secret_key = NULL WHERE secret_key IS NOT NULL AND purpose IN ('issuer', 'webhook') RETURNING key_id`,
  );
  for (const p of ['issuer', 'webhook'] as const)
    await tx.query('UPDATE service_keys SET source = $2 WHERE key_id = $1', [active(p)!.key_id, keys[p].source]);
  return erased.length;
}
