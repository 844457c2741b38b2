// The transparency log in Postgres, read side: its size, roots and proofs from the stored complete-subtree
// hashes (generic over leaf hashes). Leaves come in through sequence.ts and integrate.ts.
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import type { Queryable } from '../db/types.ts';
import { EMPTY_ROOT, nodeHash } from '@escrow-settlement/protocol/tlog/hash';
import {
  consistencyPlan,
  foldPlan,
  inclusionPlan,
  nodeKey,
  rootPlan,
  type NodeId,
  type ProofPlan,
} from '@escrow-settlement/protocol/tlog/nodes';
import type { HashReader } from '@escrow-settlement/protocol/tlog/proofs';

/** Number of leaves integrated into the log (pending leaves are not counted until integrated). */
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

/** MTH(D[0:size]) as hex (RFC 6962 §2.1); the empty log's root is SHA-256("") (docs/protocol.md §12.1). */
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
