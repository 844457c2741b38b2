// Signed tree heads and C2SP checkpoints: the active issuer key's signature over the log's size and root.
import { fromHex } from '../crypto/bytes.ts';
import { sign, signJson } from '../crypto/ed25519.ts';
import type { Queryable } from '../db/types.ts';
import { activeKey, type SigningKey } from '../domain/keys.ts';
import { formatCheckpoint, signNote } from '../tlog/checkpoint.ts';
import type { SignedHead } from '@escrow-settlement/client/types';
import { rootAt } from './store.ts';

type HeadRow = { size: string; now: Date; root_hash: string | null; signed_at: string | null; signature: string | null };

const toHead = (logSize: number, key: SigningKey, r: { root_hash: string; signed_at: string; signature: string }): SignedHead => ({
  logSize,
  rootHash: r.root_hash,
  signedAt: r.signed_at,
  keyId: key.keyId,
  signature: { signer: key.publicKey, signature: r.signature },
});

/**
 * The head of the `size`-leaf log (default: the current size) signed by `key` over
 * JCS({logSize, rootHash, signedAt}) (SPEC part 2, Signed bodies; CONTRACT §4). Signatures are
 * cached in log_heads per (size, key): a size's root never changes, so every request for it gets
 * the same signedAt, and a rotation starts a fresh cache row under the new key.
 */
async function headWith(q: Queryable, key: SigningKey, size?: number): Promise<SignedHead> {
  // One query: the committed size, the database clock (business time is database time, DESIGN
  // "Habits" 13) and any cached signature for the size asked about.
  const [row] = await q.query<HeadRow>(
    `SELECT s.size::text AS size, svc_now() AS now, h.root_hash, h.signed_at, h.signature
       FROM log_state s
       LEFT JOIN log_heads h ON h.size = COALESCE($1::bigint, s.size) AND h.key_id = $2
      WHERE s.id = 1`,
    [size ?? null, key.keyId],
  );
  const current = Number(row.size);
  const logSize = size ?? current;
  if (!Number.isSafeInteger(logSize) || logSize < 0 || logSize > current) {
    throw new RangeError(`log size ${logSize} is not between 0 and the current size ${current}`);
  }
  if (row.root_hash !== null && row.signed_at !== null && row.signature !== null) {
    return toHead(logSize, key, { root_hash: row.root_hash, signed_at: row.signed_at, signature: row.signature });
  }
  const rootHash = await rootAt(q, logSize);
  const signedAt = row.now.toISOString();
  const signature = signJson({ logSize, rootHash, signedAt }, key.secretKey);
  // Two requests may sign the same size at once; the primary key keeps the first, and the loser
  // returns the stored row so that one size has one signedAt per key.
  const inserted = await q.query(
    `INSERT INTO log_heads (size, key_id, root_hash, signed_at, signature) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (size, key_id) DO NOTHING RETURNING size`,
    [logSize, key.keyId, rootHash, signedAt, signature],
  );
  if (inserted.length === 1) return toHead(logSize, key, { root_hash: rootHash, signed_at: signedAt, signature });
  const [stored] = await q.query<{ root_hash: string; signed_at: string; signature: string }>(
    'SELECT root_hash, signed_at, signature FROM log_heads WHERE size = $1 AND key_id = $2',
    [logSize, key.keyId],
  );
  return toHead(logSize, key, stored);
}

/** The signed head of the `size`-leaf log (default: current), by the active issuer key. */
export async function signedHead(q: Queryable, size?: number): Promise<SignedHead> {
  return headWith(q, await activeKey(q, 'issuer'), size);
}

/**
 * The current head as a C2SP tlog-checkpoint signed note (c2sp.org/tlog-checkpoint, CONTRACT §7):
 * origin, size, base64 root; signed by the active issuer key under the key name `origin`.
 * Ed25519 is deterministic, so the same head always gives the same note; nothing to cache.
 */
export async function checkpointNote(q: Queryable, origin: string): Promise<{ note: string; head: SignedHead }> {
  const key = await activeKey(q, 'issuer');
  const head = await headWith(q, key);
  const text = formatCheckpoint({ origin, size: head.logSize, rootHash: fromHex(head.rootHash) });
  const note = signNote(text, { name: origin, publicKey: fromHex(key.publicKey), sign: (msg) => sign(msg, key.secretKey) });
  return { note, head };
}
