// Signed tree heads and C2SP checkpoints: the active head key's signature over the log's size and
// root. The integrator publishes one head per batch (integrate.ts); reading a head is then a lookup.
// The key comes from the caller (HeadKeys): src/log knows keys by id only.
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import type { Queryable } from '../db/types.ts';
import { formatCheckpoint, signNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import type { Inclusion, SignedHead } from '@escrow-settlement/protocol/types';
import type { HeadKeys, HeadSigner } from './keys.ts';
import { inclusionAt, rootAt } from './store.ts';

type HeadRow = {
  size: string;
  now: Date;
  key_id: string | null;
  root_hash: string | null;
  signed_at: string | null;
  signature: string | null;
};

const toHead = (logSize: number, key: HeadSigner, r: { root_hash: string; signed_at: string; signature: string }): SignedHead => ({
  logSize,
  rootHash: r.root_hash,
  signedAt: r.signed_at,
  keyId: key.keyId,
  signature: { signer: key.publicKey, signature: r.signature },
});

/**
 * The head of the `size`-leaf log (default: the current size) signed by the active key over
 * JCS({logSize, rootHash, signedAt}) (docs/protocol.md §2.7, §12.4). Signatures are
 * kept in log_heads per (size, key): a size's root never changes, so every request for it gets the
 * same signedAt, and a rotation starts a fresh row under the new key. Returns the signer too.
 */
async function headWith(q: Queryable, keys: HeadKeys, size?: number): Promise<{ head: SignedHead; signer: HeadSigner }> {
  // One query: the integrated size, the database clock (business time is database time,
  // docs/protocol.md §2.5), the active key and any stored signature for the size asked about under it.
  const [row] = await q.query<HeadRow>(
    `SELECT s.size::text AS size, svc_now() AS now, k.key_id, h.root_hash, h.signed_at, h.signature
       FROM log_state s
       CROSS JOIN (SELECT (${keys.activeKeyIdSql}) AS key_id) k
       LEFT JOIN log_heads h ON h.size = COALESCE($1::bigint, s.size) AND h.key_id = k.key_id
      WHERE s.id = 1`,
    [size ?? null],
  );
  if (!row.key_id) throw new Error('no active head key');
  const signer = await keys.signer(q, row.key_id);
  const current = Number(row.size);
  const logSize = size ?? current;
  if (!Number.isSafeInteger(logSize) || logSize < 0 || logSize > current) {
    throw new RangeError(`log size ${logSize} is not between 0 and the current size ${current}`);
  }
  if (row.root_hash !== null && row.signed_at !== null && row.signature !== null) {
    return { head: toHead(logSize, signer, { root_hash: row.root_hash, signed_at: row.signed_at, signature: row.signature }), signer };
  }
  // A size no batch published under this key (the empty log, a size before a rotation): sign it now.
  const rootHash = await rootAt(q, logSize);
  const signedAt = row.now.toISOString();
  const signature = toHex(signer.sign(canonicalBytes({ logSize, rootHash, signedAt })));
  // Two requests may sign the same size at once; the primary key keeps the first, and the loser
  // returns the stored row so that one size has one signedAt per key.
  type Stored = { root_hash: string; signed_at: string; signature: string };
  let [stored] = await q.query<Stored>(
    `WITH ins AS (INSERT INTO log_heads (size, key_id, root_hash, signed_at, signature) VALUES ($1, $2, $3, $4, $5)
                  ON CONFLICT (size, key_id) DO NOTHING RETURNING root_hash, signed_at, signature)
     SELECT root_hash, signed_at, signature FROM ins
     UNION ALL SELECT root_hash, signed_at, signature FROM log_heads WHERE size = $1 AND key_id = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    [logSize, signer.keyId, rootHash, signedAt, signature],
  );
  // The winner committed while this statement waited on the conflict: its row is newer than the
  // statement's snapshot, so read it in a statement of its own.
  if (!stored)
    [stored] = await q.query<Stored>('SELECT root_hash, signed_at, signature FROM log_heads WHERE size = $1 AND key_id = $2', [
      logSize,
      signer.keyId,
    ]);
  return { head: toHead(logSize, signer, stored), signer };
}

/** The signed head of the `size`-leaf log (default: the current integrated size). */
export async function signedHead(q: Queryable, keys: HeadKeys, size?: number): Promise<SignedHead> {
  return (await headWith(q, keys, size)).head;
}

/** Inclusion of a leaf in the log at the size read with it, with the signed head of that size (docs/protocol.md §12.5). */
export async function inclusionWithHead(
  q: Queryable,
  keys: HeadKeys,
  leaf: { leafIndex: number; leafHash: string; logSize: number },
): Promise<Inclusion> {
  const [{ auditPath, rootHash }, head] = await Promise.all([
    inclusionAt(q, leaf.leafIndex, leaf.logSize),
    signedHead(q, keys, leaf.logSize),
  ]);
  return { leafIndex: leaf.leafIndex, leafHash: leaf.leafHash, logSize: leaf.logSize, rootHash, auditPath, head };
}

/**
 * The current head as a C2SP tlog-checkpoint signed note (c2sp.org/tlog-checkpoint, docs/protocol.md §12.7):
 * origin, size, base64 root; signed by the active key under the key name `origin`.
 * Ed25519 is deterministic, so the same head always gives the same note; nothing to cache.
 */
export async function checkpointNote(q: Queryable, keys: HeadKeys, origin: string): Promise<{ note: string; head: SignedHead }> {
  const { head, signer } = await headWith(q, keys);
  const text = formatCheckpoint({ origin, size: head.logSize, rootHash: fromHex(head.rootHash) });
  const note = signNote(text, { name: origin, publicKey: fromHex(signer.publicKey), sign: (msg) => signer.sign(msg) });
  return { note, head };
}
