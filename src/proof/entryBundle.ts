// Entry bundles (c2sp.org/tlog-tiles "Log entries"): the log's entries are settlement proofs, and an
// entry's bytes are exactly what its leaf hash covers, JCS(proof) (leaf hash = SHA-256(0x00 || entry),
// docs/witnessing.md), so a follower can hash what it downloads and compare it with the level-0 tile.
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import type { Queryable } from '../db/types.ts';
import { encodeBundle, TILE_WIDTH, type TileRef } from '@escrow-settlement/protocol/tlog/tiles';

/** The entry bundle of tile `t`: each proof at leaf indices [256N, 256N + W) as uint16 length + JCS bytes. */
export async function readEntryBundle(q: Queryable, t: TileRef): Promise<Uint8Array> {
  const first = t.index * TILE_WIDTH;
  // An index range scan on proofs' unique leaf_index.
  const rows = await q.query<{ doc: string }>(
    'SELECT doc FROM proofs WHERE leaf_index >= $1::bigint AND leaf_index < $2::bigint ORDER BY leaf_index',
    [first, first + t.width],
  );
  if (rows.length !== t.width) throw new Error(`entry bundle ${t.index} needs ${t.width} entries, found ${rows.length}`);
  return encodeBundle(rows.map((r) => canonicalBytes(JSON.parse(r.doc))));
}
