// Servers for the facilitator tests: the service itself on a real port (HTTPFacilitatorClient uses
// the global fetch, so it needs an address), and a resource server that puts an unmodified
// @x402/core x402HTTPResourceServer in front of plain node:http routes, as a framework middleware does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  FacilitatorResponseError,
  type HTTPFacilitatorClient,
  x402HTTPResourceServer,
  x402ResourceServer,
  type HTTPAdapter,
  type HTTPRequestContext,
  type HTTPResponseInstructions,
  type RoutesConfig,
} from '@x402/core/server';
import { parseConfig } from '../../src/config.ts';
import { createApp, type App } from '../../src/app.ts';
import { nodeListener } from '../../src/node/adapter.ts';
import { openStore, type StoreKind } from '../harness.ts';
import type { Db } from '../../src/db/types.ts';
import type { AuthCaptureServer } from '@escrow-settlement/client/x402/authCapture';

export interface Service {
  app: App;
  db: Db;
  url: string;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const closeServer = (s: Server) =>
  new Promise<void>((r) => {
    s.closeAllConnections();
    s.close(() => r());
  });

export async function startService(kind: StoreKind, env: Record<string, string> = {}): Promise<Service> {
  const store = await openStore(kind);
  const app = createApp({ db: store.db, config: parseConfig({ DATA_DIR: ':memory:', ...env }) });
  const server = createServer(nodeListener(app, { trustProxy: false }));
  const url = await listen(server);
  return {
    app,
    db: store.db,
    url,
    close: async () => {
      await closeServer(server);
      await store.drop();
    },
  };
}

export type Handler = () => Promise<unknown>;

export interface ResourceServer {
  url: string;
  scheme: AuthCaptureServer;
  http: x402HTTPResourceServer;
  close(): Promise<void>;
}

function send(res: ServerResponse, r: HTTPResponseInstructions): void {
  const body = r.body === undefined ? '' : typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
  res.writeHead(r.status, { 'content-type': 'application/json', ...r.headers });
  res.end(body);
}

/**
 * The resource server: `routes` maps "GET /path" to a payment option and `handlers` maps the path
 * to what it answers. Collect before the handler, capture after it with the JSON it returned as the
 * delivery, void when it throws: @x402/core decides each step, this only carries the HTTP.
 */
export async function startResourceServer(opts: {
  facilitator: HTTPFacilitatorClient;
  scheme: AuthCaptureServer;
  routes: RoutesConfig;
  handlers: Record<string, Handler>;
  /** Per path: @x402/core's settlement override for the capture (a partial capture's amount). */
  overrides?: Record<string, { amount: string }>;
}): Promise<ResourceServer> {
  const rs = new x402ResourceServer(opts.facilitator).register('escrow:sandbox', opts.scheme);
  const http = new x402HTTPResourceServer(rs, opts.routes);
  await http.initialize();
  let base = '';
  const listener = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', base);
    const header = (name: string) => {
      const v = req.headers[name.toLowerCase()];
      return Array.isArray(v) ? v[0] : v;
    };
    const adapter: HTTPAdapter = {
      getHeader: header,
      getMethod: () => req.method ?? 'GET',
      getPath: () => url.pathname,
      getUrl: () => url.href,
      getAcceptHeader: () => header('accept') ?? '',
      getUserAgent: () => header('user-agent') ?? '',
    };
    const context: HTTPRequestContext = {
      adapter,
      path: url.pathname,
      method: req.method ?? 'GET',
      paymentHeader: header('payment-signature') ?? header('x-payment'),
    };
    try {
      const result = await http.processHTTPRequest(context);
      if (result.type === 'no-payment-required') return send(res, { status: 404, headers: {}, body: { error: 'no such route' } });
      if (result.type === 'payment-error') return send(res, result.response);
      let body: string;
      try {
        body = JSON.stringify(await opts.handlers[url.pathname]());
      } catch {
        const cancel = await result.cancellationDispatcher.cancel({ reason: 'handler_threw' });
        const headers = http.createFailurePathSettlementHeaders(cancel, result.beforeHandlerSettlement, result.paymentPayload) ?? {};
        return send(res, { status: 500, headers, body: { error: 'the handler failed' } });
      }
      const settled = await http.processSettlement(
        result.paymentPayload,
        result.paymentRequirements,
        result.declaredExtensions,
        { request: context, responseBody: Buffer.from(body), responseHeaders: { 'content-type': 'application/json' } },
        opts.overrides?.[url.pathname],
        result.beforeHandlerSettlement,
      );
      if (!settled.success) return send(res, { ...settled.response, headers: { ...settled.headers, ...settled.response.headers } });
      return send(res, { status: 200, headers: settled.headers, body });
    } catch (err) {
      // A facilitator that did not answer (a timeout): the payment's outcome is unknown here.
      if (err instanceof FacilitatorResponseError) return send(res, { status: 502, headers: {}, body: { error: err.message } });
      throw err;
    }
  };
  const server = createServer(
    (req, res) =>
      void listener(req, res).catch(() => {
        if (!res.headersSent) send(res, { status: 500, headers: {}, body: {} });
      }),
  );
  base = await listen(server);
  return { url: base, scheme: opts.scheme, http, close: () => closeServer(server) };
}
