// The answers the Node edge gives by itself, before or around app.fetch: the same JSON error envelope,
// x-request-id and nosniff as every answer of the core (docs/security.md "The edge").
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Headers on every answer: a JSON body is never sniffed into something a browser would run. */
export const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const;

/** The envelope's status, headers and body, for writers that are not a ServerResponse (a raw socket). */
export function edgeEnvelope(
  status: number,
  code: string,
  message: string,
  extra: Record<string, string> = {},
): { status: number; headers: Record<string, string>; body: string } {
  const body = JSON.stringify({ error: { code, message, docsUrl: `/docs/errors#${code}` } });
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': randomUUID(), ...NOSNIFF, ...extra },
    body,
  };
}

/** The envelope as a fetch Response (the adapter's error handler). */
export function edgeResponse(status: number, code: string, message: string, extra: Record<string, string> = {}): Response {
  const e = edgeEnvelope(status, code, message, extra);
  return new Response(e.body, { status: e.status, headers: e.headers });
}

/** Writes the envelope on a ServerResponse. */
export function sendEdge(res: ServerResponse, status: number, code: string, message: string, extra: Record<string, string> = {}): void {
  const e = edgeEnvelope(status, code, message, extra);
  res.writeHead(e.status, { ...e.headers, 'content-length': String(Buffer.byteLength(e.body)) });
  res.end(e.body);
}

/** Node's default maxHeadersCount: header lines past it are dropped by the parser, not refused. */
export const MAX_HEADER_LINES = 2000;

/**
 * What the edge refuses in a request Node parsed: a request whose header lines reached the parser's
 * count (the rest, a Host among them, were dropped unseen: 431), and an HTTP/1.1 request without
 * Host (RFC 9112 §3.2: 400). The server runs with requireHostHeader off so this answer, not Node's
 * bare one, is sent. Null when the request may go on.
 */
export function refuseParsed(
  req: IncomingMessage,
  maxHeaderLines = MAX_HEADER_LINES,
): { status: number; code: string; message: string } | null {
  if (req.rawHeaders.length / 2 >= maxHeaderLines) {
    return {
      status: 431,
      code: 'headers_too_large',
      message: `the request has ${maxHeaderLines} or more header lines; at most ${maxHeaderLines - 1} are read`,
    };
  }
  if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
    return {
      status: 400,
      code: 'bad_request',
      message: 'malformed HTTP request: an HTTP/1.1 request must carry a Host header (RFC 9112 §3.2)',
    };
  }
  return null;
}
