// The service's notion of now (docs/protocol.md §9.4): the database clock plus the sandbox
// offset (svc_now(), migration 001). Client-signed actions and x402 offers are judged against it.
import type { Queryable } from '../db/types.ts';
import { badRequest } from '../errors.ts';

/** The longest a single stage deadline reaches ahead (10 years, src/validate.ts MAX_STAGE_SECONDS). */
const LONGEST_DEADLINE_S = 315_360_000;
/**
 * The shifted clock stays before this instant, so that now plus the longest deadline still falls
 * before year 9999: four-digit years are what ISO 8601 timestamps (and this service's inputs) hold.
 */
export const CLOCK_CEILING = new Date(Date.UTC(9999, 0, 1) - LONGEST_DEADLINE_S * 1000);

export interface ClockState {
  now: string;
  offsetSeconds: number;
}

/** svc_now() as the ISO string clients sign against (the `x-service-now` response header). */
export async function serviceNow(q: Queryable): Promise<string> {
  const [r] = await q.query<{ now: Date }>('SELECT svc_now() AS now');
  return r.now.toISOString();
}

export async function readClock(q: Queryable): Promise<ClockState> {
  const [r] = await q.query<{ now: Date; offset_ms: string }>(
    'SELECT svc_now() AS now, offset_ms::text AS offset_ms FROM clock WHERE id = 1',
  );
  return { now: r.now.toISOString(), offsetSeconds: Number(r.offset_ms) / 1000 };
}

/**
 * Moves the clock forward by `seconds` (the route caps one call at 10 years). The bound is checked
 * in the same statement that moves the clock, so concurrent advances cannot together pass it.
 */
export async function advanceClock(q: Queryable, seconds: number): Promise<ClockState> {
  // Row lock on the clock's one row for this statement: concurrent advances apply one after another,
  // each checking the bound against the offset the previous one left.
  const rows = await q.query<{ now: Date; offset_ms: string }>(
    `UPDATE clock SET offset_ms = offset_ms + $1::bigint * 1000
      WHERE id = 1 AND now() + (offset_ms + $1::bigint * 1000) * interval '1 millisecond' < $2::timestamptz
      RETURNING date_trunc('milliseconds', now() + offset_ms * interval '1 millisecond') AS now, offset_ms::text AS offset_ms`,
    [seconds, CLOCK_CEILING.toISOString()],
  );
  if (rows.length === 0) {
    const cur = await readClock(q);
    throw badRequest(
      `advanceSeconds would move the clock past ${CLOCK_CEILING.toISOString()} (now ${cur.now}, offset ${cur.offsetSeconds} s): the clock must stay 10 years (the longest deadline) before year 9999`,
    );
  }
  return { now: rows[0].now.toISOString(), offsetSeconds: Number(rows[0].offset_ms) / 1000 };
}
