// Listing escrows: filters (state, party agent, created range) and keyset pages on escrows.seq
// (docs/protocol.md §9.2, §9.3).
import type { CommandDeps } from '../commandDeps.ts';
import { cutPage, sqlLimit } from '../paging.ts';
import { ESCROW_COLS, fromRow, toJson } from './escrowRow.ts';
import type { EscrowState } from './states.ts';

export const ESCROW_CURSOR = 'esc';
/** Cursors of the newest-first list: a cursor of one order is refused by the other (docs/protocol.md §9.3). */
export const ESCROW_CURSOR_NEWEST = 'escnew';

/** `?order=`: creation order (the default) or its reverse. */
export const ESCROW_ORDERS = ['oldest', 'newest'] as const;
export type EscrowOrder = (typeof ESCROW_ORDERS)[number];

/** The cursor list name of an order. */
export const escrowCursorOf = (order: EscrowOrder | undefined): string => (order === 'newest' ? ESCROW_CURSOR_NEWEST : ESCROW_CURSOR);

export interface EscrowFilter {
  state?: EscrowState;
  /** Public key of a party: escrows where it is the payer or the payee. */
  partyKey?: string;
  /** Strict bounds on createdAt. */
  createdAfter?: Date;
  createdBefore?: Date;
  /** A minted key's list holds only the escrows it sees (tenancy, src/access/tenancy.ts); absent: every escrow. */
  tenant?: string;
  /** newest: by seq descending, the cursor a bound from above; absent or oldest: creation order. */
  order?: EscrowOrder;
}

/**
 * One statement per filter combination, built from only the filters given, so each shape gets a plan
 * that uses its index (state, seq) or (payer_key, seq) / (payee_key, seq) instead of a generic plan
 * full of `$n IS NULL OR …`.
 */
function listSql(f: EscrowFilter, after: bigint | null, limit: number | null): { text: string; params: unknown[] } {
  const newest = f.order === 'newest';
  // seq is a bigserial: no row has a key above the largest bigint, so it starts a newest-first read.
  const params: unknown[] = [(after ?? (newest ? 9223372036854775807n : 0n)).toString()];
  const where = [newest ? 'e.seq < $1' : 'e.seq > $1'];
  const p = (v: unknown) => `$${params.push(v)}`;
  if (f.state !== undefined) where.push(`e.state = ${p(f.state)}`);
  if (f.partyKey !== undefined) {
    const k = p(f.partyKey);
    where.push(`(e.payer_key = ${k} OR e.payee_key = ${k})`);
  }
  if (f.createdAfter !== undefined) where.push(`e.created_at > ${p(f.createdAfter)}`);
  if (f.createdBefore !== undefined) where.push(`e.created_at < ${p(f.createdBefore)}`);
  if (f.tenant !== undefined) where.push(`EXISTS (SELECT 1 FROM escrow_tenants t WHERE t.escrow_id = e.id AND t.key_id = ${p(f.tenant)})`);
  const lim = limit === null ? '' : ` LIMIT ${p(limit)}`;
  return {
    text: `SELECT ${ESCROW_COLS}, e.seq::text AS seq FROM escrows e WHERE ${where.join(' AND ')} ORDER BY e.seq${newest ? ' DESC' : ''}${lim}`,
    params,
  };
}

/** One page of escrows in creation order (or its reverse, f.order newest), and the cursor of the next page (null at the end). */
export async function listEscrows(
  svc: CommandDeps,
  f: EscrowFilter,
  after: bigint | null,
  limit: number,
): Promise<{ escrows: Record<string, unknown>[]; nextCursor: string | null }> {
  const q = listSql(f, after, sqlLimit(limit));
  const rows = await svc.db.query(q.text, q.params);
  const { page, nextCursor } = cutPage(rows, limit, escrowCursorOf(f.order), (r) => r.seq);
  return { escrows: page.map((r) => toJson(fromRow(r))), nextCursor };
}

/**
 * Every matching escrow (docs/protocol.md §9.2: the list without `limit`), streamed as `{"escrows":[…],"nextCursor":null}`
 * in batches of 500 read by key, so 100k escrows never sit in memory at once (bench run 6:
 * buffering them peaked at 710 MB).
 */
export async function streamAllEscrows(svc: CommandDeps, f: EscrowFilter, from: bigint | null): Promise<ReadableStream<Uint8Array>> {
  const enc = new TextEncoder();
  let after: bigint | null = from;
  let first = true;
  let started = false;
  const page = () => {
    const q = listSql(f, after, 500);
    return svc.db.query(q.text, q.params);
  };
  // The first page is read before the answer starts: a database that cannot be reached is then a
  // 503 with the error envelope, not a 200 cut off mid-body.
  let firstPage: Awaited<ReturnType<typeof page>> | null = await page();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(enc.encode('{"escrows":['));
      }
      const rows = firstPage ?? (await page());
      firstPage = null;
      if (rows.length > 0) {
        const parts = rows.map((r) => JSON.stringify(toJson(fromRow(r))));
        controller.enqueue(enc.encode((first ? '' : ',') + parts.join(',')));
        first = false;
        after = BigInt(rows[rows.length - 1].seq);
      }
      if (rows.length < 500) {
        controller.enqueue(enc.encode('],"nextCursor":null}'));
        controller.close();
      }
    },
  });
}
