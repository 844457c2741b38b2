// Tiles (c2sp.org/tlog-tiles) read straight from the stored complete-subtree nodes: a level-L hash
// tile is the nodes of tree level 8L at indices [256N, 256N + W), so one index range scan on
// log_nodes' primary key answers it, whatever the log's size. No second copy of the tree is kept.
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import type { Queryable } from '../db/types.ts';
import { TILE_HEIGHT, TILE_WIDTH, type TileRef } from '@escrow-settlement/protocol/tlog/tiles';

/**
 * Whether tile `t` may be served: a full tile once the log covers it; a partial tile of width W
 * only when a published head's size gives exactly that width there (tlog-tiles: partial tiles
 * exist for checkpoint sizes), so no one can fetch a tile of a size the log never signed.
 */
export async function tileServable(q: Queryable, t: TileRef): Promise<boolean> {
  const treeLevel = TILE_HEIGHT * (t.level === 'entries' ? 0 : t.level);
  const span = 2 ** treeLevel;
  const lo = (t.index * TILE_WIDTH + t.width) * span;
  const hi = lo + span;
  if (!Number.isSafeInteger(hi)) return false;
  if (t.width === TILE_WIDTH) {
    const [row] = await q.query<{ ok: boolean }>('SELECT size >= $1::bigint AS ok FROM log_state WHERE id = 1', [lo]);
    return row.ok;
  }
  // An index range scan on log_heads' primary key (size, key_id): a lookup, never a scan of the heads.
  const rows = await q.query('SELECT 1 FROM log_heads WHERE size >= $1::bigint AND size < $2::bigint LIMIT 1', [lo, hi]);
  return rows.length === 1;
}

/** The bytes of hash tile `t` (width * 32), from log_nodes; throws when a node is missing (a broken store). */
export async function readHashTile(q: Queryable, t: TileRef & { level: number }): Promise<Uint8Array> {
  const first = t.index * TILE_WIDTH;
  const rows = await q.query<{ hash: string }>(
    'SELECT hash FROM log_nodes WHERE level = $1 AND idx >= $2::bigint AND idx < $3::bigint ORDER BY idx',
    [TILE_HEIGHT * t.level, first, first + t.width],
  );
  if (rows.length !== t.width) throw new Error(`log tile ${t.level}/${t.index} needs ${t.width} stored nodes, found ${rows.length}`);
  const out = new Uint8Array(t.width * 32);
  rows.forEach((r, i) => out.set(fromHex(r.hash), i * 32));
  return out;
}
