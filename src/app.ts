// createApp(deps) → { fetch }: router, auth, limits and the one error boundary. Web APIs only.
import { IttyRouter } from 'itty-router';
import type { Config } from './config.ts';
import type { Db } from './db/types.ts';
import { AppError } from './errors.ts';
import { errorResponse } from './http/respond.ts';
import type { Caller, Ctx, RouteDef } from './http/route.ts';
import { authenticate } from './http/auth.ts';
import { allRoutes } from './routes/index.ts';
import { VERSION, type Services } from './services.ts';
import { createSimulatedCustody, type CustodyAdapter } from './domain/custody.ts';

export interface AppDeps {
  db: Db;
  config: Config;
  custody?: CustodyAdapter;
  nowMs?: () => number;
  /** Called with every unexpected (non-AppError) failure, for the operator log. */
  onError?: (err: unknown, requestId: string) => void;
}

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
    db: deps.db,
    config: deps.config,
    custody: deps.custody ?? createSimulatedCustody(),
    version: VERSION,
    startedAt: nowMs(),
    nowMs,
  };
  const routes = allRoutes();
  const router = IttyRouter();
  for (const def of routes) {
    (router as any)[def.method.toLowerCase()](def.path, (req: Request & { params: Record<string, string> }, ctx: Ctx) => {
      ctx.params = decodeParams(req.params);
      return run(def, ctx);
    });
  }

  async function run(def: RouteDef, ctx: Ctx): Promise<Response> {
    ctx.caller = await authenticate(def, ctx.request, svc, ctx.caller.ip);
    if (def.sandboxOnly && svc.config.apiKey !== undefined) {
      throw new AppError('forbidden', 'this route exists only in the open sandbox (no API_KEY configured)');
    }
    return def.handler(ctx);
  }

  async function fetch(request: Request, info: RequestInfo = {}): Promise<Response> {
    const given = request.headers.get('x-request-id');
    const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    const url = new URL(request.url);
    const ctx: Ctx = {
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
