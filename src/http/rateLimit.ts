// Rate limiting (docs/protocol.md §18.4): which budget a request spends, and a fixed-window
// limiter whose counters live in Postgres, so every instance of a deployment spends one shared budget.
import type { Config } from '../config.ts';
import type { Queryable } from '../db/types.ts';
import { AppError } from '../errors.ts';
import type { Caller, RouteDef } from './route.ts';
import type { Budget, RateDecision, RateLimiter, RateSnapshot } from '../access/rateTypes.ts';

export type { Budget, RateDecision, RateLimiter, RateSnapshot };

/**
 * The budget a routed request spends, after authentication (docs/protocol.md §18.4): authenticated /v1 traffic
 * per key on hosted deployments, with the key's own rateLimitMax when it has one; in the open sandbox
 * key routes are not limited ("/v1 per client on hosted deployments"). Public log routes per client
 * IP, and POST /v1/verify per IP on a stricter budget of its own, in both modes.
 */
export function budgetFor(def: RouteDef, caller: Caller, config: Config): Budget | null {
  switch (def.rate) {
    case 'key':
      if (config.apiKey === undefined || caller.keyId === null) return null;
      return { unit: `key:${caller.keyId}`, limit: caller.rateLimitMax ?? config.rateLimitMax };
    case 'public':
      return { unit: `ip:${caller.ip}`, limit: config.publicRateLimitMax };
    case 'verify':
      return { unit: `verify:${caller.ip}`, limit: config.verifyRateLimitMax };
    default:
      return null;
  }
}

/**
 * The budget a request spends when it fails authentication on a hosted deployment: `authfail:<ip>`,
 * a unit of its own (docs/protocol.md §18.4), so a client with a wrong key exhausts neither its IP's public log
 * budget nor anyone's key budget, and the root key, which never fails, is never locked out by it.
 * It keeps key guessing, and the key lookups that costs, bounded per address.
 */
export const failedAuthBudget = (ip: string, config: Config): Budget => ({ unit: `authfail:${ip}`, limit: config.authFailRateLimitMax });

/** RateLimit-* headers (IETF draft "RateLimit header fields for HTTP"); Reset is in seconds from now. */
export function rateHeaders(d: RateDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(d.limit),
    'RateLimit-Remaining': String(d.remaining),
    'RateLimit-Reset': String(resetSeconds(d)),
  };
}

const resetSeconds = (d: RateDecision) => Math.max(1, Math.ceil(d.resetMs / 1000));

/** The 429 for an over-budget decision, with Retry-After and the RateLimit-* headers (docs/protocol.md §18.4). */
export function rateLimited(d: RateDecision, windowMs: number): AppError {
  const retry = resetSeconds(d);
  return new AppError(
    'rate_limited',
    `over the budget of ${d.limit} requests per ${windowMs / 1000} s for ${d.unit}; retry after ${retry} s`,
    {
      headers: { 'Retry-After': String(retry), ...rateHeaders(d) },
    },
  );
}

/** Spends the budget and throws the 429 when it is exhausted; returns the decision for the headers. */
export async function spend(limiter: RateLimiter, budget: Budget | null): Promise<RateDecision | null> {
  if (budget === null) return null;
  const d = await limiter.hit(budget);
  if (!d.allowed) throw rateLimited(d, limiter.windowMs);
  return d;
}

type HitRow = { hits: number; window_idx: number; now_ms: number; gen: number; svc_now: Date | string };
type UnitRow = { idx: number; unit: string | null; hits: number | null };

/**
 * A fixed-window limiter over the rate_counters table. Windows are numbered by the database clock
 * (floor(epoch ms / windowMs)), so every instance agrees on where a window starts. Two bounds keep it
 * from growing: past windows are deleted once per new window by each instance, and a unit found over
 * budget is refused locally, without a query, for the rest of its window (that map is pruned on each
 * new window too), so a flood costs the database one statement per instance per unit per window.
 */
export function createRateLimiter(db: Queryable, windowMs: number, nowMs: () => number = () => Date.now()): RateLimiter {
  let newestWindow = -1;
  /** unit → local clock ms at which its exhausted window ends. */
  const blocked = new Map<string, number>();
  let rejected = 0;

  async function hit(budget: Budget): Promise<RateDecision> {
    const now = nowMs();
    const until = blocked.get(budget.unit);
    if (until !== undefined) {
      if (now < until) {
        rejected++;
        return { ...budget, allowed: false, remaining: 0, resetMs: until - now };
      }
      blocked.delete(budget.unit);
    }
    // Row lock on (window, unit), held for this one autocommit statement: concurrent requests of one
    // unit queue on it for the length of an increment, other units never contend. Two first requests
    // of a window racing to insert: ON CONFLICT makes the second wait for the first and increment.
    const [row] = await db.query<HitRow>(
      `INSERT INTO rate_counters AS c (window_idx, unit, hits)
       VALUES (floor(extract(epoch FROM now()) * 1000 / $2::float8)::bigint, $1, 1)
       ON CONFLICT (window_idx, unit) DO UPDATE SET hits = c.hits + 1
       RETURNING c.hits, c.window_idx::float8 AS window_idx, (extract(epoch FROM now()) * 1000)::float8 AS now_ms,
         (SELECT gen FROM api_key_generation WHERE id = 1)::float8 AS gen, svc_now() AS svc_now`,
      [budget.unit, windowMs],
    );
    if (row.window_idx > newestWindow) await newWindow(row.window_idx, now);
    const resetMs = Math.max(0, (row.window_idx + 1) * windowMs - row.now_ms);
    const allowed = row.hits <= budget.limit;
    if (!allowed) {
      rejected++;
      blocked.set(budget.unit, now + resetMs);
    }
    // The revocation generation rides on this statement, which every authenticated request makes
    // anyway: a cached key is re-verified only when a revocation happened (src/access/authCache.ts).
    // So does the service clock, for routes whose answers tell it (x-service-now): no round trip of its own.
    return {
      ...budget,
      allowed,
      remaining: Math.max(0, budget.limit - row.hits),
      resetMs,
      generation: Number(row.gen),
      serviceNow: new Date(row.svc_now).toISOString(),
    };
  }

  async function newWindow(idx: number, now: number): Promise<void> {
    newestWindow = idx;
    for (const [unit, until] of blocked) if (until <= now) blocked.delete(unit);
    // Past windows are never read again. Every instance runs this once per window; the statements
    // delete disjoint or already-deleted rows, so concurrent runs only wait on each other's row locks.
    await db.query('DELETE FROM rate_counters WHERE window_idx < $1::bigint', [idx]);
  }

  async function snapshot(): Promise<RateSnapshot> {
    const rows = await db.query<UnitRow>(
      `WITH w AS (SELECT floor(extract(epoch FROM now()) * 1000 / $1::float8)::bigint AS idx)
       SELECT w.idx::float8 AS idx, c.unit, c.hits FROM w LEFT JOIN rate_counters c ON c.window_idx = w.idx
       ORDER BY c.unit`,
      [windowMs],
    );
    const units: Record<string, number> = {};
    for (const r of rows) if (r.unit !== null) units[r.unit] = Number(r.hits);
    return { windowMs, windowStartedAt: new Date(rows[0].idx * windowMs).toISOString(), units };
  }

  return {
    windowMs,
    hit,
    snapshot,
    get rejected() {
      return rejected;
    },
  };
}
