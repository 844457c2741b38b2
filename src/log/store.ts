// The transparency log in Postgres: sequences leaves, stores complete-subtree hashes, reads proofs (generic over leaf hashes).
import { fromHex, isHex64, toHex } from '../crypto/bytes.ts';
import type { Queryable } from '../db/types.ts';
import { EMPTY_ROOT, nodeHash } from '../tlog/hash.ts';
import {
  consistencyPlan,
  foldPlan,
  inclusionPlan,
  nodeKey,
  nodesCompletedByAppend,
  rootPlan,
  type NodeId,
  type ProofPlan,
} from '../tlog/nodes.ts';
import type { HashReader } from '../tlog/proofs.ts';

// The deepest level a left sibling can sit at: sizes stay below 2^53 (safe integers).
const MAX_LEVEL = 52;

/** Rows for log_nodes as one JSON text parameter (cast ::text::json in SQL, so neither driver re-encodes it). */
const nodesJson = (nodes: Array<{ level: number; idx: number; hash: string }>) => JSON.stringify(nodes);

/**
 * Appends one leaf inside the caller's transaction and returns its index (leaf order = commit order).
 * Two round trips: (1) the sequencing UPDATE pipelined with the read of the left siblings the append
 * completes, (2) one INSERT of the leaf node and every interior node it completes (RFC 6962 §2.1).
 * Needs READ COMMITTED (the default): the sibling read is its own statement, so its snapshot is taken
 * after the row lock is granted and sees the nodes of the append that held the lock before.
 */
export async function appendLeaf(tx: Queryable, leafHashHex: string): Promise<number> {
  if (!isHex64(leafHashHex)) throw new TypeError('leafHashHex must be 64 lowercase hex characters');
  const [seq, siblings] = await tx.batch([
    // Row lock on log_state (id = 1), held until the caller commits: it is the log's sequencer.
    // Concurrent closings queue here one at a time, so indexes are dense and each leaf's siblings
    // are committed before it is hashed; a rollback releases the index for the next append.
    {
      text: 'UPDATE log_state SET size = size + 1 WHERE id = 1 RETURNING (size - 1)::text AS index',
    },
    // Left children of the nodes the append completes: for new size N, every level l with
    // N % 2^(l+1) = 0 needs node (l, N/2^l - 2) (tlog nodesCompletedByAppend). Reads the size this
    // transaction just wrote, so no parameter depends on the first statement's answer.
    {
      text: `SELECT l AS level, n.hash FROM log_state s
               CROSS JOIN generate_series(0, ${MAX_LEVEL - 1}) AS l
               JOIN log_nodes n ON n.level = l AND n.idx = (s.size >> l) - 2
              WHERE s.id = 1 AND s.size % (2::bigint << l) = 0
              ORDER BY l`,
    },
  ]);
  const index = Number(seq[0].index);
  const completed = nodesCompletedByAppend(index + 1);
  if (siblings.length !== completed.length) {
    throw new Error(`log is inconsistent: append ${index} needs ${completed.length} stored siblings, found ${siblings.length}`);
  }
  const rows = [{ level: 0, idx: index, hash: leafHashHex }];
  let right = fromHex(leafHashHex);
  completed.forEach((id, i) => {
    right = nodeHash(fromHex(siblings[i].hash as string), right);
    rows.push({ level: id.level, idx: id.index, hash: toHex(right) });
  });
  await tx.query(
    `INSERT INTO log_nodes (level, idx, hash)
     SELECT level, idx, hash FROM json_to_recordset($1::text::json) AS x(level smallint, idx bigint, hash text)`,
    [nodesJson(rows)],
  );
  return index;
}

/** Number of leaves committed to the log. */
export async function logSize(q: Queryable): Promise<number> {
  const [row] = await q.query<{ size: string }>('SELECT size::text AS size FROM log_state WHERE id = 1');
  return Number(row.size);
}

/** A tlog HashReader over log_nodes: one query for any number of ids, answers in the order asked. */
export function hashReader(q: Queryable): HashReader {
  return async (ids: NodeId[]) => {
    if (ids.length === 0) return [];
    const want = ids.map((id, ord) => ({ ord, level: id.level, idx: id.index }));
    const rows = await q.query<{ ord: number; hash: string | null }>(
      `SELECT w.ord, n.hash FROM json_to_recordset($1::text::json) AS w(ord int, level smallint, idx bigint)
         LEFT JOIN log_nodes n ON n.level = w.level AND n.idx = w.idx`,
      [JSON.stringify(want)],
    );
    const out: Uint8Array[] = new Array(ids.length);
    for (const r of rows) {
      if (r.hash === null) throw new RangeError(`log node ${nodeKey(ids[r.ord])} is not stored`);
      out[r.ord] = fromHex(r.hash);
    }
    return out;
  };
}

/** Runs several proof plans off one read, so a proof and the roots it needs cost one query. */
async function readPlans(q: Queryable, plans: ProofPlan[]): Promise<string[][]> {
  const ids = plans.flatMap((p) => p.ids);
  const hashes = await hashReader(q)(ids);
  let pos = 0;
  return plans.map((plan) => {
    const values = hashes.slice(pos, pos + plan.ids.length);
    pos += plan.ids.length;
    return foldPlan(plan, values, nodeHash).map(toHex);
  });
}

function checkSize(size: number, name: string): void {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`${name} must be a non-negative safe integer`);
}

/** MTH(D[0:size]) as hex (RFC 6962 §2.1); the empty log's root is SHA-256("") (CONTRACT §2). */
export async function rootAt(q: Queryable, size: number): Promise<string> {
  checkSize(size, 'size');
  if (size === 0) return toHex(EMPTY_ROOT);
  const [[root]] = await readPlans(q, [rootPlan(size)]);
  return root;
}

/** Audit path of leaf `index` in the `size`-leaf log, bottom to top, with that log's root (one query). */
export async function inclusionAt(q: Queryable, index: number, size: number): Promise<{ auditPath: string[]; rootHash: string }> {
  checkSize(size, 'size');
  const [auditPath, [rootHash]] = await readPlans(q, [inclusionPlan(index, size), rootPlan(size)]);
  return { auditPath, rootHash };
}

/** Consistency proof from `first` to `second` leaves (1 <= first <= second) with both roots (one query). */
export async function consistencyBetween(
  q: Queryable,
  first: number,
  second: number,
): Promise<{ firstRoot: string; secondRoot: string; path: string[] }> {
  const [path, [firstRoot], [secondRoot]] = await readPlans(q, [consistencyPlan(first, second), rootPlan(first), rootPlan(second)]);
  return { firstRoot, secondRoot, path };
}
