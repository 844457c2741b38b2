// The integrate step: one transaction takes committed pending leaves, gives them the next dense
// indices, writes every subtree node they complete and the new size, and publishes one signed head
// for the new size. One integrator at a time across all instances (a transaction-scoped advisory
// lock); a crash anywhere in it rolls the whole batch back, and the leaves stay pending for the next.
import { canonicalBytes } from '../crypto/jcs.ts';
import { toHex } from '../crypto/bytes.ts';
import type { Db, Row, Stmt } from '../db/types.ts';
import { appendBatch, type NodeRow } from './append.ts';
import type { HeadKeys } from './keys.ts';

// Key of the integrator's advisory lock, per schema (two logs in two schemas do not share it).
export const INTEGRATE_LOCK_SQL = `hashtext(current_schema() || ':log-integrate')`;

// The deepest level a frontier node can sit at: sizes stay below 2^53 (safe integers).
const MAX_LEVEL = 52;

export interface Integrated {
  entryId: string;
  index: number;
}

export interface BatchResult {
  /** What this batch integrated, in index order (empty: nothing was pending). */
  integrated: Integrated[];
  /** The log size after the batch. */
  size: number;
  rootHash?: string;
}

export interface IntegrateOptions {
  keys: HeadKeys;
  /** At most this many leaves per batch (one transaction). */
  max: number;
  /** Statements that record the assigned indices where the log's owner keeps them (run in the batch). */
  indexed?: (done: Integrated[]) => Stmt[];
}

const nodesJson = (nodes: NodeRow[]) => JSON.stringify(nodes);

/**
 * One batch. Round trips: (1) BEGIN, the lock, the size with the frontier, the active key and the
 * pending leaves, pipelined (each statement's snapshot is taken after the lock is granted, READ
 * COMMITTED, so it sees every batch committed before); (2) nodes, size, the owner's index
 * statements, the signed head and COMMIT, pipelined.
 */
export async function integrateBatch(db: Db, opts: IntegrateOptions): Promise<BatchResult> {
  return db.tx(async (tx) => {
    const [, stateRows, frontierRows, pending] = await tx.batch([
      // Lock: blocks while another instance's batch runs; then this batch sees what it committed.
      { text: `SELECT pg_advisory_xact_lock(${INTEGRATE_LOCK_SQL})` },
      { text: `SELECT s.size::text AS size, svc_now() AS now, (${opts.keys.activeKeyIdSql}) AS key_id FROM log_state s WHERE s.id = 1` },
      {
        // The frontier of the current size: node (l, (size >> l) - 1) for every set bit l, highest first.
        text: `SELECT l AS level, n.idx::text AS idx, n.hash FROM log_state s
                 CROSS JOIN generate_series(0, ${MAX_LEVEL}) AS l
                 JOIN log_nodes n ON n.level = l AND n.idx = (s.size >> l) - 1
                WHERE s.id = 1 AND ((s.size >> l) & 1) = 1
                ORDER BY l DESC`,
      },
      {
        text: `DELETE FROM log_pending WHERE seq IN (SELECT seq FROM log_pending ORDER BY seq LIMIT $1)
               RETURNING seq::text AS seq, entry_id, leaf_hash`,
        params: [opts.max],
      },
    ]);
    const size = Number(stateRows[0].size);
    if (pending.length === 0) return { integrated: [], size };
    const leaves = (pending as Row[]).sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
    const frontier = frontierRows.map((r) => ({ level: Number(r.level), idx: Number(r.idx), hash: r.hash as string }));
    const appended = appendBatch(size, frontier, leaves.map((l) => l.leaf_hash as string));
    const integrated = leaves.map((l, i) => ({ entryId: l.entry_id as string, index: size + i }));
    // Publish: the head of the new size, signed once here, so readers find it instead of signing.
    const signer = await opts.keys.signer(tx, stateRows[0].key_id as string);
    const signedAt = (stateRows[0].now as Date).toISOString();
    const signature = toHex(signer.sign(canonicalBytes({ logSize: appended.size, rootHash: appended.rootHash, signedAt })));
    const [, moved] = await tx.commitWith([
      {
        text: `INSERT INTO log_nodes (level, idx, hash)
               SELECT level, idx, hash FROM json_to_recordset($1::text::json) AS x(level smallint, idx bigint, hash text)`,
        params: [nodesJson(appended.rows)],
      },
      // The guard on the old size makes a second writer (a bug, the lock being bypassed) fail loudly,
      // inside the statement (division by zero when no row moved), so the batch rolls back with it.
      {
        text: `WITH u AS (UPDATE log_state SET size = $2 WHERE id = 1 AND size = $1 RETURNING size)
               SELECT 1 / count(*)::int AS moved FROM u`,
        params: [size, appended.size],
      },
      ...(opts.indexed?.(integrated) ?? []),
      {
        text: `INSERT INTO log_heads (size, key_id, root_hash, signed_at, signature) VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (size, key_id) DO NOTHING`,
        params: [appended.size, signer.keyId, appended.rootHash, signedAt, signature],
      },
    ]);
    if (moved[0]?.moved !== 1) throw new Error(`log size moved from ${size} during an integration batch`);
    return { integrated, size: appended.size, rootHash: appended.rootHash };
  });
}
