// createApp(deps) → { fetch }: router, auth, limits and the one error boundary. Web APIs only.
import { IttyRouter } from 'itty-router';
import type { Config } from './config.ts';
import type { Db } from './db/types.ts';
import { AppError } from './errors.ts';
import { errorResponse } from './http/respond.ts';
import type { Caller, Ctx, RouteDef } from './http/route.ts';
import { authenticate } from './http/auth.ts';
import { budgetFor, createRateLimiter, failedAuthBudget, rateHeaders, spend, type RateDecision } from './http/rateLimit.ts';
import { allRoutes } from './routes/index.ts';
import { VERSION, type RequestLogStats, type Services } from './services.ts';
import { createSimulatedCustody, type CustodyAdapter } from './domain/custody.ts';
import { createProofLog } from './domain/proofLog.ts';
import type { ResolveHost, WebhookTransport } from './webhooks/transport.ts';

export interface AppDeps {
  db: Db;
  config: Config;
  custody?: CustodyAdapter;
  nowMs?: () => number;
  /** Called with every unexpected (non-AppError) failure, for the operator log. */
  onError?: (err: unknown, requestId: string) => void;
  /** Where each request's log record goes (CONTRACT §1 REQUEST_LOG); the Node edge's file writer is src/requestLog.node.ts. */
  requestLog?: RequestLogSink;
  /** Webhook POSTs (default: fetch with no redirects; the Node edge injects src/webhooks/transport.node.ts). */
  webhookTransport?: WebhookTransport;
  /** DNS for the registration-time webhook SSRF check (the Node edge injects dns.lookup). */
  resolveHost?: ResolveHost;
}

/** One request, as the request log records it: never a secret, an Authorization header or a body. */
export interface RequestLogRecord {
  at: string;
  requestId: string;
  method: string;
  /** The matched route pattern (`/v1/escrows/:id`), null for an unknown route. */
  route: string | null;
  status: number;
  durationMs: number;
  keyId: string | null;
  ip: string;
}

export interface RequestLogSink {
  write(record: RequestLogRecord): void;
  stats(): RequestLogStats;
}

/** What app.fetch keeps about a request beyond the route's Ctx: the route matched and the budget spent. */
type AppCtx = Ctx & { route?: RouteDef; rate?: RateDecision | null };

export interface RequestInfo {
  /** Client address from the edge (node:http socket, Deno.serve info). */
  ip?: string;
}

export interface App {
  fetch(request: Request, info?: RequestInfo): Promise<Response>;
  routes: ReadonlyArray<RouteDef>;
  svc: Services;
}

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

export function createApp(deps: AppDeps): App {
  const nowMs = deps.nowMs ?? (() => Date.now());
  const svc: Services = {
    routes: [],
    db: deps.db,
    config: deps.config,
    log: createProofLog(deps.db, { waitMs: deps.config.logIntegrateWaitMs }),
    custody: deps.custody ?? createSimulatedCustody(),
    version: VERSION,
    startedAt: nowMs(),
    nowMs,
    rateLimiter: createRateLimiter(deps.db, deps.config.rateLimitWindowMs),
    requestLogStats: () => deps.requestLog?.stats() ?? { lines: 0, rotations: 0 },
    webhookTransport: deps.webhookTransport,
    resolveHost: deps.resolveHost,
  };
  const routes = allRoutes();
  svc.routes = routes;
  const router = IttyRouter();
  for (const def of routes) {
    (router as any)[def.method.toLowerCase()](def.path, (req: Request & { params: Record<string, string> }, ctx: AppCtx) => {
      ctx.params = decodeParams(req.params);
      return run(def, ctx);
    });
  }

  async function run(def: RouteDef, ctx: AppCtx): Promise<Response> {
    ctx.route = def;
    try {
      ctx.caller = await authenticate(def, ctx.request, svc, ctx.caller.ip);
    } catch (err) {
      // Without a valid key the client is its address: the 401 spends the IP's budget (SPEC part 8).
      if (err instanceof AppError && err.code === 'unauthorized') ctx.rate = await spend(svc.rateLimiter, failedAuthBudget(ctx.caller.ip, svc.config));
      throw err;
    }
    if (def.sandboxOnly && svc.config.apiKey !== undefined) {
      throw new AppError('forbidden', 'this route exists only in the open sandbox (no API_KEY configured)');
    }
    // Limits apply after authentication, so a key's budget is spent only by that key (SPEC part 8).
    ctx.rate = await spend(svc.rateLimiter, budgetFor(def, ctx.caller, svc.config));
    // No id contains NUL (%00), and Postgres text cannot hold one: answer here, not with a database error.
    if (Object.values(ctx.params).some((v) => v.includes('\u0000'))) throw new AppError('not_found', 'no resource has an id containing NUL (%00)');
    return def.handler(ctx);
  }

  async function fetch(request: Request, info: RequestInfo = {}): Promise<Response> {
    const started = performance.now();
    const at = new Date().toISOString();
    const given = request.headers.get('x-request-id');
    const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    const url = new URL(request.url);
    const ctx: AppCtx = {
      request,
      params: {},
      query: url.searchParams,
      svc,
      caller: { keyId: null, ip: info.ip ?? 'unknown' },
      requestId,
    };
    let response: Response;
    try {
      response = ((await router.fetch(request, ctx)) as Response | undefined) ??
        errorResponse(new AppError('not_found', `no route for ${request.method} ${url.pathname}`));
    } catch (err) {
      if (!(err instanceof AppError)) deps.onError?.(err, requestId);
      response = errorResponse(err);
    }
    response.headers.set('x-request-id', requestId);
    // The budget a request spent is told on every answer it gets, not only on the 429.
    if (ctx.rate) for (const [k, v] of Object.entries(rateHeaders(ctx.rate))) if (!response.headers.has(k)) response.headers.set(k, v);
    if (deps.requestLog) {
      const durationMs = Math.round((performance.now() - started) * 100) / 100;
      const { keyId, ip } = ctx.caller;
      try {
        deps.requestLog.write({ at, requestId, method: request.method, route: ctx.route?.path ?? null, status: response.status, durationMs, keyId, ip });
      } catch (err) {
        // A full disk must not turn answered requests into failures; the operator log hears of it.
        deps.onError?.(err, requestId);
      }
    }
    return response;
  }

  return { fetch, routes, svc };
}

function decodeParams(p: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(p)) {
    try {
      out[k] = decodeURIComponent(v);
    } catch {
      out[k] = v;
    }
  }
  return out;
}

export type { Caller };
