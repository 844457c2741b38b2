// createApp(deps) → { fetch }: router, auth, limits and the one error boundary. Web APIs only.
import type { Ap2Issuers } from '@escrow-settlement/protocol/ap2/chain';
import { IttyRouter } from 'itty-router';
import type { Config } from './config.ts';
import type { Db } from './db/types.ts';
import { AppError } from './errors.ts';
import { errorResponse } from './http/respond.ts';
import type { Caller, Ctx, RouteDef } from './http/route.ts';
import { authenticate, recheckRevocation } from './http/auth.ts';
import { createAuthCache } from './http/authCache.ts';
import { budgetFor, createRateLimiter, failedAuthBudget, rateHeaders, spend, type RateDecision } from './http/rateLimit.ts';
import { checkCrossSite, corsHeaders, preflightHeaders } from './http/crossSite.ts';
import { allowTable, methodNotAllowed, SERVED_METHODS } from './http/methods.ts';
import { checkParams } from './http/params.ts';
import { assertVisible } from './access/tenancy.ts';
import { serviceNow } from './escrow/clock.ts';
import { allRoutes } from './routes/index.ts';
import { VERSION, type RequestLogStats, type Services } from './services.ts';
import { createSimulatedCustody, type CustodyAdapter } from './custody/simulated.ts';
import { createProofLog } from './proof/proofLog.ts';
import { createAnchor } from './witness/anchor.ts';
import { memoryKeySources, useKeySources, webhookSigner, type KeySources } from './proof/keys.ts';
import type { ResolveHost, WebhookTransport } from './webhooks/transport.ts';

export interface AppDeps {
  db: Db;
  config: Config;
  custody?: CustodyAdapter;
  nowMs?: () => number;
  /** Called with every unexpected (non-AppError) failure, for the operator log. */
  onError?: (err: unknown, requestId: string) => void;
  /** Where each request's log record goes (README.md "Configuration", REQUEST_LOG); the Node edge's file writer is src/node/requestLog.ts. */
  requestLog?: RequestLogSink;
  /** Webhook POSTs (default: fetch with no redirects; the Node edge injects src/node/webhookTransport.ts). */
  webhookTransport?: WebhookTransport;
  /** DNS for the registration-time webhook SSRF check (the Node edge injects dns.lookup). */
  resolveHost?: ResolveHost;
  /** Witness submissions (c2sp.org/tlog-witness add-checkpoint; default: global fetch). */
  witnessFetch?: typeof fetch;
  /** The trusted AP2 issuer keys AP2_ISSUERS names (read by the edge, src/node/ap2Files.ts); absent: AP2 is off. */
  ap2Issuers?: Ap2Issuers;
  /** How key sources load (issuer rotation; default: keys in memory only). The Node edge injects src/node/serviceKeys.ts. */
  keySources?: KeySources;
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
type AppCtx = Ctx & { route?: RouteDef; rate?: RateDecision | null; tellNow?: boolean };

export interface RequestInfo {
  /** Client address from the edge (node:http socket, Deno.serve info). */
  ip?: string;
  /**
   * The edge's per-client concurrency cap, for the requests the app runs on the client's behalf
   * inside this one (the calls of an MCP batch): takes one more place for the client and returns
   * the function that gives it back, or the edge's 429 answer when the client has none left.
   * Absent: the edge caps nothing (Deno, tests).
   */
  admit?: () => (() => void) | Response;
  /** The request target's path as sent, before URL parsing normalised it (Ctx.rawPath). */
  rawPath?: string;
}

/**
 * ctx.refetch of one request: each inner request counts against the client's concurrency cap as the
 * same request sent on its own would (docs/security.md "The edge"). The outer request's own place
 * serves one inner request at a time; every further one open at once takes a place of its own, or is
 * answered with the edge's 429. The inner answer is read in full before its place is given back.
 */
function refetcher(fetch: (r: Request, info: RequestInfo) => Promise<Response>, info: RequestInfo): (r: Request) => Promise<Response> {
  let ownPlaceFree = true;
  return async (sub) => {
    let leave: (() => void) | undefined;
    if (ownPlaceFree) {
      ownPlaceFree = false;
      leave = () => {
        ownPlaceFree = true;
      };
    } else if (info.admit) {
      const place = info.admit();
      if (place instanceof Response) return place;
      leave = place;
    }
    try {
      const res = await fetch(sub, info);
      const body = await res.arrayBuffer();
      return new Response(res.status === 204 || res.status === 304 ? null : body, { status: res.status, headers: res.headers });
    } finally {
      leave?.();
    }
  };
}

export interface App {
  fetch(request: Request, info?: RequestInfo): Promise<Response>;
  routes: ReadonlyArray<RouteDef>;
  svc: Services;
  /**
   * The 405 for a method no fetch Request can carry (TRACE, TRACK, CONNECT: the Fetch standard
   * forbids them), for the edge to send as is. `target` is the request target (path and query).
   */
  refuseMethod(method: string, target: string): Response;
}

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

export function createApp(deps: AppDeps): App {
  const nowMs = deps.nowMs ?? (() => Date.now());
  // The log's anchor in its witnesses is also the proof log's gate (src/witness/anchor.ts); it opens
  // and closes only once the jobs run its checks (src/witness/check.ts), and is open without witnesses.
  const anchor = createAnchor({
    enabled: deps.config.witnesses.length > 0,
    bestEffort: deps.config.witnessStart === 'best-effort',
    retryAfterS: Math.max(1, Math.ceil(deps.config.witnessIntervalMs / 1000)),
  });
  const proofLog = createProofLog(deps.db, { waitMs: deps.config.logIntegrateWaitMs, gate: anchor });
  anchor.onOpen = () => proofLog.poke();
  const svc: Services = {
    db: deps.db,
    config: deps.config,
    proofLog,
    anchor,
    custody: deps.custody ?? createSimulatedCustody(),
    version: VERSION,
    startedAt: nowMs(),
    nowMs,
    rateLimiter: createRateLimiter(deps.db, deps.config.rateLimitWindowMs),
    authCache: createAuthCache(),
    requestLogStats: () => deps.requestLog?.stats() ?? { lines: 0, rotations: 0 },
    webhookTransport: deps.webhookTransport,
    resolveHost: deps.resolveHost,
    witnessFetch: deps.witnessFetch,
    ap2: deps.ap2Issuers
      ? { issuers: deps.ap2Issuers, audience: deps.config.ap2Audience ?? deps.config.publicUrl, pisp: deps.config.ap2Pisp }
      : null,
    webhookSigner,
    keySources: deps.keySources ?? memoryKeySources,
  };
  if (deps.keySources) useKeySources(deps.keySources);
  const routes = allRoutes();
  const router = IttyRouter();
  for (const def of routes) {
    // biome-ignore lint/suspicious/noExplicitAny: itty-router's method table is keyed by the lower-case method name.
    (router as any)[def.method.toLowerCase()](def.path, (req: Request & { params: Record<string, string> }, ctx: AppCtx) => {
      ctx.params = decodeParams(req.params);
      return run(def, ctx);
    });
  }
  const allowFor = allowTable(router.routes as never);

  async function run(def: RouteDef, ctx: AppCtx): Promise<Response> {
    ctx.route = def;
    try {
      ctx.caller = await authenticate(def, ctx.request, svc, ctx.caller.ip);
    } catch (err) {
      // Without a valid key the client is its address: the 401 spends authfail:<ip>, its own unit (docs/protocol.md §18.4).
      if (err instanceof AppError && err.code === 'unauthorized')
        ctx.rate = await spend(svc.rateLimiter, failedAuthBudget(ctx.caller.ip, svc.config));
      throw err;
    }
    if (def.sandboxOnly && svc.config.apiKey !== undefined) {
      throw new AppError('forbidden', 'this route exists only in the open sandbox (no API_KEY configured)');
    }
    // Limits apply after authentication, so a key's budget is spent only by that key (docs/protocol.md §18.4).
    ctx.rate = await spend(svc.rateLimiter, budgetFor(def, ctx.caller, svc.config));
    // A cached minted key: revoked since it was verified? The budget statement just said.
    try {
      await recheckRevocation(svc, ctx.caller, ctx.rate?.generation);
    } catch (err) {
      ctx.caller = { keyId: null, ip: ctx.caller.ip };
      ctx.rate = await spend(svc.rateLimiter, failedAuthBudget(ctx.caller.ip, svc.config));
      throw err;
    }
    // Path and query strings obey the body's rules (no NUL, well-formed Unicode): a 400 naming them.
    checkParams(ctx.params, ctx.query);
    // Tenancy (docs/protocol.md §18.3): a minted key's unknown and other keys' matters are both simply 404.
    if (def.tenant) await assertVisible(svc.db, ctx.caller, def.tenant, ctx.params.id);
    ctx.tellNow = def.signsAgainstNow === true;
    return def.handler(ctx);
  }

  /** OPTIONS, routing, HEAD as GET without its body, and 405/404 for what no route takes. */
  async function dispatch(request: Request, url: URL, ctx: AppCtx, corsOrigin: string | null): Promise<Response> {
    const method = request.method.toUpperCase();
    const allow = allowFor(url.pathname);
    if (!SERVED_METHODS.has(method)) throw methodNotAllowed(method, url.pathname, allow);
    if (method === 'OPTIONS') {
      if (allow.length === 0) throw new AppError('not_found', 'no route for this path');
      const preflight = corsOrigin !== null && request.headers.has('access-control-request-method');
      return new Response(null, {
        status: 204,
        headers: { allow: allow.join(', '), ...(preflight ? preflightHeaders(corsOrigin, allow.join(', ')) : {}) },
      });
    }
    const routed = method === 'HEAD' ? new Request(request.url, { method: 'GET', headers: request.headers }) : request;
    const res = (await router.fetch(routed, ctx)) as Response | undefined;
    if (res && method === 'HEAD') {
      res.body?.cancel().catch(() => {});
      return new Response(null, { status: res.status, headers: res.headers });
    }
    if (res) return res;
    if (allow.length > 0) throw methodNotAllowed(method, url.pathname, allow);
    // The path is not echoed: an answer never reflects what a link-maker put in the URL.
    throw new AppError('not_found', 'no route for this method and path; see /v1/openapi.json for the routes');
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
      routes,
      refetch: refetcher(fetch, { ...info, rawPath: undefined }),
      ...(info.rawPath !== undefined ? { rawPath: info.rawPath } : {}),
    };
    let response: Response;
    let corsOrigin: string | null = null;
    try {
      // Before anything is read or done: a refused cross-site request leaves no trace but its answer.
      corsOrigin = checkCrossSite(request, url, svc.config).corsOrigin;
      response = await dispatch(request, url, ctx, corsOrigin);
    } catch (err) {
      if (!(err instanceof AppError)) deps.onError?.(err, requestId);
      response = errorResponse(err);
    }
    response.headers.set('x-request-id', requestId);
    // No answer is ever sniffed into another type (HTML pages set it too; JSON needs it as much).
    response.headers.set('x-content-type-options', 'nosniff');
    // Client-signed actions are checked against the service clock: every answer (a 422 for skew
    // above all) tells the client what that clock reads. Best effort: a failure here changes nothing.
    // The rate-limit statement read the clock already; only a request refused before it costs a query.
    if (ctx.tellNow && !(ctx.serviceSigned && response.status < 400)) {
      if (ctx.rate?.serviceNow) response.headers.set('x-service-now', ctx.rate.serviceNow);
      else
        await serviceNow(svc.db).then(
          (now) => response.headers.set('x-service-now', now),
          () => {},
        );
    }
    if (corsOrigin !== null) for (const [k, v] of Object.entries(corsHeaders(corsOrigin))) response.headers.set(k, v);
    else if (svc.config.corsOrigins.length > 0) response.headers.append('vary', 'Origin');
    // The budget a request spent is told on every answer it gets, not only on the 429.
    if (ctx.rate) for (const [k, v] of Object.entries(rateHeaders(ctx.rate))) if (!response.headers.has(k)) response.headers.set(k, v);
    if (deps.requestLog) {
      const durationMs = Math.round((performance.now() - started) * 100) / 100;
      const { keyId, ip } = ctx.caller;
      try {
        deps.requestLog.write({
          at,
          requestId,
          method: request.method,
          route: ctx.route?.path ?? null,
          status: response.status,
          durationMs,
          keyId,
          ip,
        });
      } catch (err) {
        // A full disk must not turn answered requests into failures; the operator log hears of it.
        deps.onError?.(err, requestId);
      }
    }
    return response;
  }

  function refuseMethod(method: string, target: string): Response {
    let pathname = '/';
    try {
      pathname = new URL(target, 'http://localhost').pathname;
    } catch {
      // An authority-form CONNECT target (host:port) names no path: nothing is allowed on it.
    }
    const res = errorResponse(methodNotAllowed(method, pathname, target.startsWith('/') ? allowFor(pathname) : []));
    res.headers.set('x-request-id', crypto.randomUUID());
    res.headers.set('x-content-type-options', 'nosniff');
    return res;
  }

  return { fetch, routes, svc, refuseMethod };
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
