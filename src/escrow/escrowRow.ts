// How an escrow is read from SQL, locked for a command, and shown as JSON (docs/protocol.md §3.2).
import type { Queryable, Row, Stmt } from '../db/types.ts';
import { notFound } from '../errors.ts';
import { formatAmount } from '../units/amounts.ts';
import type { EscrowState, Facts } from './states.ts';
import type { TrailEntry } from '@escrow-settlement/protocol/trail/chain';
import type { KeyRef } from '@escrow-settlement/protocol/resources';

export type { KeyRef };

export interface Timeouts {
  deliverWithinSeconds: number;
  resolveWithinSeconds: number;
  decideWithinSeconds: number;
  timeoutRuling: 'release' | 'refund' | 'split';
  /** Refunds after release are accepted this long after the closing proof's issuedAt; 0: none (docs/protocol.md §24.4). Absent on escrows created before it existed: the default. */
  refundWithinSeconds?: number;
}

/** An escrow's fee (docs/protocol.md §24.1): `bps` of the payee's share of every closing that pays the payee goes to `recipient`. */
export interface Fee {
  bps: number;
  recipient: string;
}

export interface EscrowRow {
  id: string;
  state: EscrowState;
  payer: KeyRef;
  payee: KeyRef;
  arbiter: KeyRef | null;
  amount: bigint;
  asset: string;
  terms: { description: string; checks: unknown[] };
  termsHash: string;
  timeouts: Timeouts;
  deadlineAt: Date | null;
  mandateId: string | null;
  mandateHash: string | null;
  custodyStatus: Facts['custodyStatus'];
  verdict: Facts['verdict'];
  trailLength: number;
  trailHead: string;
  createdAt: Date;
  updatedAt: Date;
  /** The caller's notes (docs/protocol.md §3.5); null when none. Shown on the escrow, never in a proof or the trail. */
  metadata: Record<string, string> | null;
  /** The fee taken from the payee's share at a closing; null when none. */
  fee: Fee | null;
  /** Until when refunds after release are accepted; null until a closing paid the payee (or with a window of 0). */
  refundDeadline: Date | null;
  /** Micro-units refunded after release so far. */
  refunded: bigint;
}

/** A locked escrow with what its commands need to know about its delivery, dispute and custody. */
export interface Locked extends EscrowRow {
  now: Date;
  deliveryId: string | null;
  deliveryHash: string | null;
  verdictId: string | null;
  disputeId: string | null;
  disputeState: string | null;
  custodyAttempts: number;
  custodyClosing: string | null;
  custodyJournalStatus: string | null;
  /** The active issuer key's id, read in the same statement (a closing signs with it; no extra round trip). */
  issuerKeyId: string;
  /**
   * Whether a sandbox custody fault (POST /v1/sandbox/custody/fail-next) was pending when the lock
   * was read. Read here, in the lock's own statement, so that a closing with none pending sends no
   * statement to custody's fault counter (src/custody/simulated.ts takeSandboxFault).
   */
  faultPending: boolean;
  /** The amount the delivery claimed (partial capture, docs/protocol.md §24.2); null: the whole amount. */
  deliveryAmount: bigint | null;
  /** An absolute end the refund window may not pass (an x402 payer's bound refundDeadline, docs/x402.md); null: none. */
  refundBy: Date | null;
}

export const ESCROW_COLS = `e.id, e.state, e.payer, e.payee, e.arbiter, e.amount::text AS amount, e.asset, e.terms,
  e.terms_hash, e.timeouts, e.deadline_at, e.mandate_id, e.mandate_hash, e.custody_status, e.verdict,
  e.trail_length, e.trail_head, e.created_at, e.updated_at, e.metadata, e.fee, e.refund_deadline, e.refunded::text AS refunded`;

export function fromRow(r: Row): EscrowRow {
  return {
    id: r.id,
    state: r.state,
    payer: JSON.parse(r.payer),
    payee: JSON.parse(r.payee),
    arbiter: r.arbiter ? JSON.parse(r.arbiter) : null,
    amount: BigInt(r.amount),
    asset: r.asset,
    terms: JSON.parse(r.terms),
    termsHash: r.terms_hash,
    timeouts: JSON.parse(r.timeouts),
    deadlineAt: r.deadline_at ?? null,
    mandateId: r.mandate_id ?? null,
    mandateHash: r.mandate_hash ?? null,
    custodyStatus: r.custody_status,
    verdict: r.verdict,
    trailLength: Number(r.trail_length),
    trailHead: r.trail_head,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    metadata: r.metadata ? JSON.parse(r.metadata) : null,
    fee: r.fee ? JSON.parse(r.fee) : null,
    refundDeadline: r.refund_deadline ?? null,
    refunded: r.refunded ? BigInt(r.refunded) : 0n,
  };
}

export function toJson(e: EscrowRow): Record<string, unknown> {
  return {
    id: e.id,
    state: e.state,
    payer: e.payer,
    payee: e.payee,
    ...(e.arbiter ? { arbiter: e.arbiter } : {}),
    amount: formatAmount(e.amount),
    asset: e.asset,
    terms: e.terms,
    timeouts: e.timeouts,
    ...(e.deadlineAt ? { deadlineAt: e.deadlineAt.toISOString() } : {}),
    ...(e.mandateId ? { mandateId: e.mandateId } : {}),
    ...(e.mandateHash ? { mandateHash: e.mandateHash } : {}),
    custody: { status: e.custodyStatus },
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
    ...(e.metadata ? { metadata: e.metadata } : {}),
    ...(e.fee ? { fee: e.fee } : {}),
    ...(e.refundDeadline ? { refundDeadline: e.refundDeadline.toISOString(), refundedTotal: formatAmount(e.refunded) } : {}),
  };
}

/**
 * Locks the escrow row for the rest of the transaction and reads the service clock.
 * Lock: FOR UPDATE on the escrow row — every command on one escrow serialises here; another
 * escrow's commands never wait. On contention the second command waits, then sees the first's result.
 *
 * Lock first, then read: under READ COMMITTED a statement that waited for a row lock re-reads only
 * the locked row (EvalPlanQual); rows joined to it would still come from the snapshot taken before
 * the wait, so a refund that waited behind a delivery saw no delivery and signed a proof without its
 * deliveryHash. lock_escrow (migration 013) runs the two as two statements inside the server, the
 * read with a snapshot taken once the lock is held: one statement from here.
 */
export async function lockEscrow(tx: Queryable, id: string): Promise<Locked> {
  return (await lockEscrowWith(tx, id)).e;
}

/**
 * lockEscrow, reading an agent's keys in the same statement (a sandbox delivery signs with the
 * payee's held key): `agent` is null when there is no such agent.
 */
export async function lockEscrowWith(
  tx: Queryable,
  id: string,
  agentId?: string,
): Promise<{ e: Locked; agent: { publicKey: string; secretKey: string } | null }> {
  const rows =
    agentId === undefined
      ? await tx.query('SELECT * FROM lock_escrow($1)', [id])
      : await tx.query(
          `SELECT l.*, a.public_key AS agent_public_key, a.secret_key AS agent_secret_key
         FROM lock_escrow($1) l LEFT JOIN agents a ON a.id = $2`,
          [id, agentId],
        );
  if (rows.length === 0) throw notFound(`no escrow ${id}`);
  const r = rows[0];
  return { e: lockedFrom(r), agent: r.agent_public_key ? { publicKey: r.agent_public_key, secretKey: r.agent_secret_key } : null };
}

/**
 * The escrows this transaction has already locked (FOR UPDATE, e.g. a sweep pass's SKIP LOCKED
 * select), read in one statement, in the order of `ids`. The statement starts after the locks are
 * held, so its snapshot sees every commit made to them (the reason lockEscrow is two statements).
 */
export async function readLocked(tx: Queryable, ids: string[]): Promise<Locked[]> {
  if (ids.length === 0) return [];
  const rows = await tx.query(`${LOCKED_SQL} WHERE e.id IN (SELECT json_array_elements_text($1::text::json))`, [JSON.stringify(ids)]);
  const byId = new Map(rows.map((r) => [r.id as string, lockedFrom(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

// What a command knows about a locked escrow: the view of migration 013 (one definition for both reads).
const LOCKED_SQL = 'SELECT * FROM escrow_locked e';

function lockedFrom(r: Row): Locked {
  return {
    ...fromRow(r),
    now: r.now,
    deliveryId: r.delivery_id ?? null,
    deliveryHash: r.delivery_hash ?? null,
    verdictId: r.verdict_id ?? null,
    disputeId: r.dispute_id ?? null,
    disputeState: r.dispute_state ?? null,
    custodyAttempts: Number(r.custody_attempts ?? 0),
    custodyClosing: r.custody_closing ?? null,
    custodyJournalStatus: r.custody_journal_status ?? null,
    issuerKeyId: r.issuer_key_id,
    faultPending: r.fault_pending === true,
    deliveryAmount: r.delivery_amount ? BigInt(r.delivery_amount) : null,
    refundBy: r.refund_by ?? null,
  };
}

export async function getEscrow(q: Queryable, id: string): Promise<EscrowRow> {
  const rows = await q.query(`SELECT ${ESCROW_COLS} FROM escrows e WHERE e.id = $1`, [id]);
  if (rows.length === 0) throw notFound(`no escrow ${id}`);
  return fromRow(rows[0]);
}

/** The trail fields trailWrite sends as they are, in its unnest's column order. */
const UNNESTED = ['index', 'prevHash', 'hash', 'at', 'event'] as const;

/**
 * One statement that appends trail entries and fans each out to every registered webhook URL that
 * may see the escrow (outbox rows in the same transaction as the state change: docs/protocol.md §14.3): a URL
 * registered by root or the open sandbox (owner_key null) gets everything; one registered by a
 * minted key only escrows that key sees (escrow_tenants, written earlier in a creating transaction).
 * A disabled endpoint gets nothing while it is disabled (docs/protocol.md §14.5).
 */
export function trailWrite(escrowId: string, entries: TrailEntry[], newTenants?: string[]): Stmt {
  // An escrow created by the same fused write (src/db/fuse.ts) has its tenants inserted beside this
  // statement, which cannot see them: they are named here instead.
  const tenant = newTenants
    ? 'w.owner_key = ANY($8::text[])'
    : 'EXISTS (SELECT 1 FROM escrow_tenants et WHERE et.escrow_id = $1 AND et.key_id = w.owner_key)';
  return {
    text: `WITH t AS (
             INSERT INTO trail_entries (escrow_id, idx, prev_hash, hash, at, event, body)
             SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
             RETURNING idx)
           INSERT INTO outbox (escrow_id, idx, url)
           SELECT $1, t.idx, w.url FROM t CROSS JOIN webhooks w
            WHERE (w.owner_key IS NULL OR ${tenant}) AND w.disabled_at IS NULL`,
    // One array per unnest column ($2 to $6, then the bodies as JSON text in $7).
    params: [
      escrowId,
      ...UNNESTED.map((k) => entries.map((e) => e[k])),
      entries.map((e) => JSON.stringify(e.body)),
      ...(newTenants ? [newTenants] : []),
    ],
  };
}

/** Updates the escrow's state, deadline, custody status and trail head in one statement. */
export function escrowUpdate(
  id: string,
  set: {
    state: EscrowState;
    deadlineAt: Date | null;
    custodyStatus: string;
    verdict: string;
    trailLength: number;
    trailHead: string;
    now: Date;
    /** Set by a closing that paid the payee (docs/protocol.md §24.4); absent: unchanged (no extra parameter). */
    refundDeadline?: Date;
    /** The refunds-after-release total after this step; absent: unchanged. */
    refunded?: bigint;
    /** A fee chosen at delivery (an x402 capture's feeBps, docs/protocol.md §24.1); absent: unchanged. */
    fee?: Fee;
  },
): Stmt {
  const extra: unknown[] = [];
  let more = '';
  if (set.refundDeadline !== undefined) {
    extra.push(set.refundDeadline);
    more += `, refund_deadline = $${8 + extra.length}`;
  }
  if (set.refunded !== undefined) {
    extra.push(set.refunded.toString());
    more += `, refunded = $${8 + extra.length}`;
  }
  if (set.fee !== undefined) {
    extra.push(JSON.stringify(set.fee));
    more += `, fee = $${8 + extra.length}`;
  }
  return {
    text: `UPDATE escrows SET state = $2, deadline_at = $3, custody_status = $4, verdict = $5,
             trail_length = $6, trail_head = $7, updated_at = $8${more} WHERE id = $1`,
    params: [id, set.state, set.deadlineAt, set.custodyStatus, set.verdict, set.trailLength, set.trailHead, set.now, ...extra],
  };
}

/** What a step may change on the escrow's row besides its trail head; what it leaves out (or undefined) stays as it was. */
export type EscrowChange = Partial<Pick<EscrowRow, 'state' | 'deadlineAt' | 'custodyStatus' | 'verdict'>> & {
  refundDeadline?: Date;
  refunded?: bigint;
  fee?: Fee;
};

/**
 * The two writes of every step a locked escrow takes: `entries` appended to its trail (with their
 * outbox rows) and the row moved to their head, with `change` applied, at the lock's clock.
 */
export function advanceEscrow(e: Locked, entries: TrailEntry[], change: EscrowChange): Stmt[] {
  const last = entries[entries.length - 1];
  return [
    trailWrite(e.id, entries),
    escrowUpdate(e.id, {
      state: change.state ?? e.state,
      deadlineAt: change.deadlineAt === undefined ? e.deadlineAt : change.deadlineAt,
      custodyStatus: change.custodyStatus ?? e.custodyStatus,
      verdict: change.verdict ?? e.verdict,
      trailLength: last.index + 1,
      trailHead: last.hash,
      now: e.now,
      ...(change.refundDeadline !== undefined ? { refundDeadline: change.refundDeadline } : {}),
      ...(change.refunded !== undefined ? { refunded: change.refunded } : {}),
      ...(change.fee !== undefined ? { fee: change.fee } : {}),
    }),
  ];
}

/** The columns trailEntryFrom reads. */
const TRAIL_COLS = 'idx, prev_hash, hash, at, event, body';

const trailEntryFrom = (r: Row): TrailEntry => ({
  index: Number(r.idx),
  prevHash: r.prev_hash,
  hash: r.hash,
  at: r.at,
  event: r.event,
  body: JSON.parse(r.body),
});

export async function readTrail(q: Queryable, escrowId: string, upTo?: number): Promise<TrailEntry[]> {
  const rows = await q.query(
    `SELECT ${TRAIL_COLS} FROM trail_entries
      WHERE escrow_id = $1 AND ($2::int IS NULL OR idx < $2) ORDER BY idx`,
    [escrowId, upTo ?? null],
  );
  return rows.map(trailEntryFrom);
}

/**
 * A page of the trail: entries after index `after` (null: from the start), at most `limit` + 1 so the
 * caller can tell whether more exist. Trail indices are dense and only appended under the escrow's
 * row lock, so a page never shifts when entries are added.
 */
export async function readTrailPage(q: Queryable, escrowId: string, after: bigint | null, limit: number): Promise<TrailEntry[]> {
  const rows = await q.query(
    `SELECT ${TRAIL_COLS} FROM trail_entries
      WHERE escrow_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`,
    [escrowId, after === null ? -1 : Number(after), limit + 1],
  );
  return rows.map(trailEntryFrom);
}
