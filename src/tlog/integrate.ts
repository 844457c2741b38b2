// The integrate step: one transaction takes committed pending leaves, gives them the next dense
// indices, writes every subtree node they complete and the new size, and publishes one signed head
// for the new size. One integrator at a time across all instances (a transaction-scoped advisory
// lock); a crash anywhere in it rolls the whole batch back, and the leaves stay pending for the next.
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import type { Db, Row, Stmt } from '../db/types.ts';
import { appendBatch, type Appended, type NodeRow } from '@escrow-settlement/protocol/tlog/append';
import type { HeadKeys, HeadSigner } from './keys.ts';
import { fuse } from '../db/fuse.ts';

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
  /** The log as this batch left it: what the next batch of the same integrator may append to without reading. */
  tip?: Tip;
}

/**
 * The log's right edge as an integrator's own last batch left it, kept in memory so that its next
 * batch can be one round trip (integrateKnown): no read of the size, the frontier, the clock or the
 * active key, which that batch's statements check instead.
 */
export interface Tip {
  size: number;
  frontier: NodeRow[];
  signer: HeadSigner;
  /** The service clock (svc_now()) in ms as a full batch read it, and performance.now() at that moment. */
  clockMs: number;
  readAt: number;
  /** The last head's signedAt, ms: the next one is never earlier. */
  signedAtMs: number;
}

/** A leaf whose hash the integrator was handed by the closing that sequenced it. */
export interface KnownLeaf {
  entryId: string;
  leafHash: string;
}

/** integrateKnown found the log not as its tip said (another integrator moved it, the clock or the key changed, a leaf was taken). Nothing was written. */
export class StaleTip extends Error {
  code = 'STALE_TIP';
}

export interface IntegrateOptions {
  keys: HeadKeys;
  /** At most this many leaves per batch (one transaction). */
  max: number;
  /** Statements that record the assigned indices where the log's owner keeps them (run in the batch). */
  indexed?: (done: Integrated[]) => Stmt[];
}

/** Every node a batch completes (both kinds of batch write them the same way). */
const nodesInsert = (nodes: NodeRow[]): Stmt => ({
  text: `INSERT INTO log_nodes (level, idx, hash)
         SELECT level, idx, hash FROM json_to_recordset($1::text::json) AS x(level smallint, idx bigint, hash text)`,
  params: [JSON.stringify(nodes)],
});

/** Publish: the head of the new size, signed here once per batch over JCS {logSize, rootHash, signedAt}, so readers find it instead of signing. */
function headInsert(appended: Appended, signer: HeadSigner, signedAt: string): Stmt {
  const signature = toHex(signer.sign(canonicalBytes({ logSize: appended.size, rootHash: appended.rootHash, signedAt })));
  return {
    text: `INSERT INTO log_heads (size, key_id, root_hash, signed_at, signature) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (size, key_id) DO NOTHING`,
    params: [appended.size, signer.keyId, appended.rootHash, signedAt, signature],
  };
}

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
    const frontier = frontierRows.map((r) => ({ level: Number(r.level), idx: Number(r.idx), hash: r.hash as string }));
    const readAt = performance.now();
    const clockMs = (stateRows[0].now as Date).getTime();
    const keyId = stateRows[0].key_id as string | null;
    if (pending.length === 0) {
      if (keyId === null) return { integrated: [], size };
      const signer = await opts.keys.signer(tx, keyId);
      return { integrated: [], size, tip: { size, frontier, signer, clockMs, readAt, signedAtMs: 0 } };
    }
    const leaves = (pending as Row[]).sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
    const appended = appendBatch(
      size,
      frontier,
      leaves.map((l) => l.leaf_hash as string),
    );
    const integrated = leaves.map((l, i) => ({ entryId: l.entry_id as string, index: size + i }));
    const signer = await opts.keys.signer(tx, stateRows[0].key_id as string);
    // Nodes, size, the owner's indices and the head: one statement (src/db/fuse.ts), with COMMIT.
    const [[moved]] = await tx.commitWith([
      fuse(
        [nodesInsert(appended.rows), ...(opts.indexed?.(integrated) ?? []), headInsert(appended, signer, new Date(clockMs).toISOString())],
        {
          // The guard on the old size makes a second writer (a bug, the lock being bypassed) fail loudly,
          // inside the statement (division by zero when no row moved), so the batch rolls back with it.
          select: {
            text: `WITH u AS (UPDATE log_state SET size = $2 WHERE id = 1 AND size = $1 RETURNING size)
               SELECT 1 / count(*)::int AS moved FROM u`,
            params: [size, appended.size],
          },
        },
      ),
    ]);
    if (moved?.moved !== 1) throw new Error(`log size moved from ${size} during an integration batch`);
    const tip: Tip = { size: appended.size, frontier: appended.frontier, signer, clockMs, readAt, signedAtMs: clockMs };
    return { integrated, size: appended.size, rootHash: appended.rootHash, tip };
  });
}

/** How far (ms) a fast batch's signedAt, the service clock extrapolated from the tip, may be from svc_now(). */
const CLOCK_SLACK_MS = 1000;

/**
 * One batch of leaves this integrator was handed, appended to its own tip: ONE statement (the lock,
 * the check, the nodes, the size, the owner's index statements and the signed head). The check moves the size from the tip's (a compare-and-set),
 * takes exactly these leaves off the pending list, and requires the active key to be the tip's and
 * svc_now() to be within CLOCK_SLACK_MS of the signedAt computed here; if any of that fails it
 * divides by zero, so the whole transaction rolls back and StaleTip is thrown (then a full batch,
 * integrateBatch, reads the log again). signedAt is the service clock the tip read, moved on by the
 * time elapsed since, never earlier than the tip's last head.
 */
export async function integrateKnown(db: Db, opts: IntegrateOptions, tip: Tip, leaves: KnownLeaf[]): Promise<BatchResult> {
  const appended = appendBatch(
    tip.size,
    tip.frontier,
    leaves.map((l) => l.leafHash),
  );
  const integrated = leaves.map((l, i) => ({ entryId: l.entryId, index: tip.size + i }));
  const signedAtMs = Math.max(tip.signedAtMs, Math.floor(tip.clockMs + (performance.now() - tip.readAt)));
  const signedAt = new Date(signedAtMs).toISOString();
  // Built (and the head signed) before a connection is taken. ONE statement, its own transaction
  // (no BEGIN, no COMMIT: src/db/pgTx.ts sends a transaction's only statement alone). Its snapshot
  // is taken before the advisory lock is granted, which is safe here because nothing it writes
  // rests on what it read: the size moves only from the tip's (an UPDATE that waited re-checks the
  // newest row, EvalPlanQual), only leaves still pending are taken, and the checks run in the main
  // query, before the nodes, indices and head (CTEs it does not read) are written.
  const stmts: Stmt[] = [
    fuse([nodesInsert(appended.rows), ...(opts.indexed?.(integrated) ?? []), headInsert(appended, tip.signer, signedAt)], {
      select: {
        text: `WITH lk AS (SELECT pg_advisory_xact_lock(${INTEGRATE_LOCK_SQL}) AS held),
                  moved AS (UPDATE log_state SET size = $2 WHERE id = 1 AND size = $1 AND (SELECT count(*) FROM lk) = 1 RETURNING size),
                  taken AS (DELETE FROM log_pending WHERE entry_id IN (SELECT json_array_elements_text($3::text::json))
                              AND (SELECT count(*) FROM lk) = 1 RETURNING seq)
             SELECT 1 / (CASE WHEN (SELECT count(*) FROM moved) = 1 AND (SELECT count(*) FROM taken) = $4
                               AND (${opts.keys.activeKeyIdSql}) IS NOT DISTINCT FROM $5::text
                               AND abs(extract(epoch FROM svc_now() - $6::timestamptz)) * 1000 < ${CLOCK_SLACK_MS}
                          THEN 1 ELSE 0 END) AS ok`,
        params: [tip.size, appended.size, JSON.stringify(leaves.map((l) => l.entryId)), leaves.length, tip.signer.keyId, signedAt],
      },
    }),
  ];
  try {
    await db.tx((tx) => tx.commitWith(stmts));
  } catch (err) {
    if ((err as { code?: string }).code === '22012')
      throw new StaleTip(`the log is not at the integrator's tip (size ${tip.size}): ${(err as Error).message}`);
    throw err;
  }
  return {
    integrated,
    size: appended.size,
    rootHash: appended.rootHash,
    tip: { ...tip, size: appended.size, frontier: appended.frontier, signedAtMs },
  };
}
