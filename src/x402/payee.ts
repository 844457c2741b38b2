// The x402 demo payee: a party the service acts for, its Ed25519 key held in held_party_keys like a
// sandbox agent's (docs/keys.md: it signs only as that party), the same on every instance.
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import type { Queryable } from '../db/types.ts';

export interface DemoPayee {
  publicKey: string;
  secretKey: Uint8Array;
}

type Row = { public_key: string; secret_key: string };

const read = (q: Queryable) => q.query<Row>(`SELECT public_key, secret_key FROM held_party_keys WHERE name = 'x402-payee'`);

/**
 * The demo payee's key, generated the first time any instance needs it and kept in the database,
 * so every instance offers the same payTo.
 */
export async function demoPayee(q: Queryable): Promise<DemoPayee> {
  let rows = await read(q);
  if (rows.length === 0) {
    const kp = generateKeyPair();
    const publicKey = toHex(kp.publicKey);
    // Lock: the primary key on name. Two instances generating at once: the second insert waits for
    // the first to commit, then does nothing, and both read the winner's key below.
    await q.query(
      `INSERT INTO held_party_keys (name, public_key, secret_key, created_at)
       VALUES ('x402-payee', $1, $2, svc_now()) ON CONFLICT (name) DO NOTHING`,
      [publicKey, toHex(kp.secretKey)],
    );
    rows = await read(q);
  }
  return { publicKey: rows[0].public_key, secretKey: fromHex(rows[0].secret_key, 'secret_key') };
}
