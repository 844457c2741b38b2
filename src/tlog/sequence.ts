// The sequence step: a closing adds its leaf to the log's pending list inside its own transaction.
// No shared row is written and nothing is waited for: concurrent closings commit side by side; the
// integrator (integrate.ts) gives the leaf its index after the commit. Never NOTIFY here: a
// notifying commit takes Postgres's database-wide notify lock, which would serialise commits again.
import { isHex64 } from '@escrow-settlement/protocol/crypto/bytes';
import type { Stmt } from '../db/types.ts';

/** The statement that sequences one leaf (hex SHA-256) under an opaque entry id, unique per log. */
export function sequenceLeaf(entryId: string, leafHashHex: string): Stmt {
  if (!isHex64(leafHashHex)) throw new TypeError('leafHashHex must be 64 lowercase hex characters');
  if (typeof entryId !== 'string' || entryId.length === 0) throw new TypeError('entryId must be a non-empty string');
  return { text: 'INSERT INTO log_pending (entry_id, leaf_hash) VALUES ($1, $2)', params: [entryId, leafHashHex] };
}
