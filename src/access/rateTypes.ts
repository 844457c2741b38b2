// The rate limiter's shapes, in a module that imports nothing, so Services can name the limiter
// without importing the limiter (which needs the route table's types, which need Services). The
// snapshot's wire shape is the client package's, which imports nothing of the service.
import type { RateSnapshot } from '@escrow-settlement/protocol/resources';

export type { RateSnapshot };

/** A budget unit (`key:root`, `key:key_…`, `ip:1.2.3.4`, `verify:1.2.3.4`, `authfail:1.2.3.4`) and its size per window. */
export interface Budget {
  unit: string;
  limit: number;
}

export interface RateDecision extends Budget {
  allowed: boolean;
  remaining: number;
  /** Milliseconds until the current window ends and the budget refills. */
  resetMs: number;
  /** The API-key revocation generation the counting statement read (absent when refused locally). */
  generation?: number;
  /** svc_now() as the counting statement read it (ISO), for x-service-now; absent when refused locally. */
  serviceNow?: string;
}

export interface RateLimiter {
  readonly windowMs: number;
  /** Spends one request from the budget; never throws for "over budget", only for a database failure. */
  hit(budget: Budget): Promise<RateDecision>;
  /** The current window's counters by unit (GET /v1/admin/rate). */
  snapshot(): Promise<RateSnapshot>;
  /** Requests this process refused with 429 since it started (a process counter, GET /v1/admin/metrics). */
  readonly rejected: number;
}
