// Node edge: adapts node:http to app.fetch. The only module besides main.ts that touches node:*.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { App } from './app.ts';

export interface AdapterOptions {
  trustProxy: boolean;
  onError?: (err: unknown) => void;
}

function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, '');
}

/** A request listener that converts IncomingMessage → Request and Response → ServerResponse. */
export function nodeListener(app: App, opts: AdapterOptions) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const host = req.headers.host ?? 'localhost';
      const url = `http://${/^[\w.:[\]-]+$/.test(host) ? host : 'localhost'}${req.url ?? '/'}`;
      const headers = new Headers();
      const raw = req.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        try {
          headers.append(raw[i], raw[i + 1]);
        } catch {
          // A header value Headers refuses (control characters): drop it rather than fail the request.
        }
      }
      const method = req.method ?? 'GET';
      const hasBody = method !== 'GET' && method !== 'HEAD';
      const request = new Request(url, {
        method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : undefined,
        // @ts-expect-error: duplex is required by Node's fetch for streamed request bodies.
        duplex: hasBody ? 'half' : undefined,
      });
      const response = await app.fetch(request, { ip: clientIp(req, opts.trustProxy) });
      const outHeaders: Record<string, string | string[]> = {};
      response.headers.forEach((v, k) => {
        outHeaders[k] = v;
      });
      const body = response.body ? new Uint8Array(await response.arrayBuffer()) : undefined;
      if (body) outHeaders['content-length'] = String(body.byteLength);
      res.writeHead(response.status, outHeaders);
      res.end(body);
      // A body the app refused before reading it all (413): stop receiving the rest.
      if (hasBody && !req.readableEnded) req.destroy();
    } catch (err) {
      opts.onError?.(err);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ error: { code: 'internal', message: 'Internal error.', docsUrl: '/docs/errors#internal' } }));
      } else res.destroy();
    }
  };
}
