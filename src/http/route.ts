// The route table's shape: each route declares its access, limits and schemas beside its handler,
// so auth, rate limits and the OpenAPI document are all read from one place.
import type { Struct } from 'superstruct';
import type { Services } from '../services.ts';
import { json } from './respond.ts';

export type Access = 'public' | 'key' | 'root';
export type RateUnit = 'key' | 'public' | 'verify';

export interface Caller {
  /** 'root', a minted key id, or null in the open sandbox / on public routes without a key. */
  keyId: string | null;
  /** Client address as the edge saw it (socket address, or first X-Forwarded-For hop with TRUST_PROXY). */
  ip: string;
  rateLimitMax?: number;
  /** A minted key's sha256 and the revocation generation it was verified at (src/access/authCache.ts). */
  secretHash?: string;
  generation?: number;
}

export interface Ctx {
  request: Request;
  params: Record<string, string>;
  query: URLSearchParams;
  svc: Services;
  caller: Caller;
  requestId: string;
  /** The route table (the OpenAPI document is generated from it). */
  routes: ReadonlyArray<RouteDef>;
  /**
   * Set by a signsAgainstNow route's handler when the request turns out to be in the sandbox form
   * (the service signs with the held agent key): a success then needs no x-service-now, which would
   * cost a round trip of its own on the hot path. Errors always carry it.
   */
  serviceSigned?: boolean;
  /**
   * Sends another request through the whole front door (cross-site checks, auth, rate limits, tenancy,
   * the route) as the same client address: the MCP endpoint runs each tool call this way (docs/mcp.md).
   */
  refetch?: (request: Request) => Promise<Response>;
  /**
   * The path of the request target as the client sent it, before URL parsing resolved its dot
   * segments (`/a/../b`, `/a/%2e%2e/b`); from the edge, absent when the app is called in-process.
   */
  rawPath?: string;
}

export interface RouteDef {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  access: Access;
  /** Routes only the open sandbox serves (hosted: 403 forbidden). */
  sandboxOnly?: boolean;
  rate?: RateUnit;
  /**
   * Tenancy (docs/protocol.md §18.3): `:id` names an escrow (or a proof of one) that a minted key must have a
   * party in; checked centrally before the handler runs (src/access/tenancy.ts).
   */
  tenant?: 'escrow' | 'proof' | 'mandate';
  /** The path parameter that names the resource, when it is not `:id` (the facilitator's `:paymentId`). */
  idParam?: string;
  /** The route takes client-signed actions with a time window: the response tells `x-service-now`. */
  signsAgainstNow?: boolean;
  summary: string;
  tag: string;
  /** Request body schema; several for routes that take alternative forms (oneOf). */
  body?: Struct<any, any> | Struct<any, any>[];
  /**
   * Status of the success response and a short description for the OpenAPI document, and the media
   * type of its body when it is not JSON (text/html pages, text/plain notes, tiles' bytes).
   */
  success: { status: number; description: string; schema?: Record<string, unknown>; contentType?: string };
  errors: string[];
  /** A page or asset for browsers (the console, /docs): served and documented, but no API client method. */
  page?: boolean;
  handler: (ctx: Ctx) => Promise<Response>;
}

/**
 * What the routes of one file of the route table share: their tag, and most often their access, rate
 * unit and tenancy. A route that differs says so itself.
 */
export type RouteGroup = Pick<RouteDef, 'tag' | 'access'> & Partial<Pick<RouteDef, 'rate' | 'tenant'>>;

/** A route's method and path in one, as the documents, the OpenAPI document and the client's API_ROUTES name it: 'POST /v1/agents'. */
export type RouteName = `${RouteDef['method']} /${string}`;

/** A route of a group, named by `route`: what the group gives may be left out. */
export type GroupRoute = Omit<RouteDef, keyof RouteGroup | 'method' | 'path'> & Partial<RouteGroup> & { route: RouteName };

/** The routes of one file; each route's name is split into the method and the path the router takes. */
export const defineRoutes = (group: RouteGroup, routes: GroupRoute[]): RouteDef[] =>
  routes.map(({ route, ...r }) => {
    const space = route.indexOf(' ');
    return { ...group, method: route.slice(0, space) as RouteDef['method'], path: route.slice(space + 1), ...r };
  });

/**
 * A GET of one resource by the `:id` of its path (or the path parameter `param`), tenancy checked
 * before it runs (docs/protocol.md §18.3): 200 with what `read` finds, which throws not_found when
 * there is nothing.
 */
export function readById(
  path: `/${string}`,
  summary: string,
  description: string,
  read: (svc: Services, id: string) => Promise<unknown>,
  param = 'id',
): GroupRoute {
  return {
    route: `GET ${path}`,
    summary,
    success: { status: 200, description },
    errors: ['unauthorized', 'not_found', 'rate_limited'],
    ...(param !== 'id' ? { idParam: param } : {}),
    handler: async ({ params, svc }) => json(await read(svc, params[param])),
  };
}
