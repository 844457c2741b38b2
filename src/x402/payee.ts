// The x402 demo payee: an Ed25519 key the service holds in service_keys (purpose x402-payee), the same on every instance.
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import type { Queryable } from '../db/types.ts';

export interface DemoPayee {
  publicKey: string;
  secretKey: Uint8Array;
}

type Row = { public_key: string; secret_key: string };

const read = (q: Queryable) =>
  q.query<Row>(`SELECT public_key, secret_key FROM service_keys WHERE purpose = 'x402-payee' AND valid_until IS NULL`);

/**
 * The demo payee's key, generated the first time any instance needs it and kept in the database
 * like the issuer key (src/proof/keys.ts ensureKeys), so every instance offers the same payTo.
 */
export async function demoPayee(q: Queryable): Promise<DemoPayee> {
  let rows = await read(q);
  if (rows.length === 0) {
    const kp = generateKeyPair();
    const publicKey = toHex(kp.publicKey);
    // Lock: the partial unique index service_keys_one_active (one active key per purpose). Two
    // instances generating at once: the second insert waits for the first to commit, then does
    // nothing, and both read the winner's key below.
    await q.query(
      `INSERT INTO service_keys (key_id, purpose, public_key, secret_key, valid_from)
       VALUES ($1, 'x402-payee', $2, $3, svc_now())
       ON CONFLICT (purpose) WHERE valid_until IS NULL DO NOTHING`,
      [`x4p_${sha256Hex(kp.publicKey).slice(0, 16)}`, publicKey, toHex(kp.secretKey)],
    );
    rows = await read(q);
  }
  return { publicKey: rows[0].public_key, secretKey: fromHex(rows[0].secret_key, 'secret_key') };
}
