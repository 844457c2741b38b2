// Browser safety (docs/protocol.md §18.5): refuse requests other web sites make a browser send,
// answer CORS for the origins the operator lists, and keep the open sandbox off DNS-rebound names.
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';

/** Request headers a CORS client may send (the preflight's Access-Control-Allow-Headers). */
const ALLOW_HEADERS = 'authorization, content-type, idempotency-key, x-request-id, x-payment, payment-signature, mcp-protocol-version';
/** Response headers a CORS client may read besides the CORS-safelisted ones. */
const EXPOSE_HEADERS =
  'x-request-id, idempotent-replayed, allow, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, x-payment-response, x-service-now';

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * Host names the open sandbox answers to. A DNS-rebinding page reaches the sandbox under the
 * attacker's own domain name; an IP literal cannot be rebound, and `localhost` (and `*.localhost`,
 * RFC 6761 §6.3) never leaves the machine, so those and PUBLIC_URL's host are the known names.
 */
function knownHost(hostname: string, config: Config): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (IPV4.test(h) || h.startsWith('[')) return true;
  return h === new URL(config.publicUrl).hostname.toLowerCase();
}

const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$/;

/** A Host header value (`host[:port]`) as a URL, or null when it is not one. */
function parseHost(value: string): URL | null {
  if (!HOST_HEADER.test(value)) return null;
  try {
    return new URL(`http://${value}`);
  } catch {
    return null;
  }
}

export interface CrossSite {
  /** The request's Origin when it is listed in CORS_ORIGINS: responses carry CORS headers for it. */
  corsOrigin: string | null;
}

/**
 * Decides before anything runs. Requests without Origin (curl, servers, same-origin GETs) pass
 * whatever their content type. Browsers always send Host and send Origin on every POST and on
 * cross-origin fetches, so a form or text/plain POST from another site, which needs no preflight,
 * is refused here, unread. Throws 403 forbidden, or 421 for an unknown Host in the open sandbox.
 */
export function checkCrossSite(request: Request, url: URL, config: Config): CrossSite {
  const hostHeader = request.headers.get('host');
  // In-process callers (tests, other runtimes' fetch) may send no Host header; the edges always do.
  const host = hostHeader === null ? url : parseHost(hostHeader);
  if (config.apiKey === undefined && hostHeader !== null && (host === null || !knownHost(host.hostname, config))) {
    throw new AppError(
      'misdirected_request',
      `this open sandbox does not answer to the host name ${JSON.stringify(hostHeader.slice(0, 100))}; use localhost, a loopback address or PUBLIC_URL's host`,
    );
  }
  const origin = request.headers.get('origin');
  if (origin !== null) {
    if (config.corsOrigins.includes(origin)) return { corsOrigin: origin };
    if (sameOrigin(origin, host, config)) return { corsOrigin: null };
    throw new AppError(
      'forbidden',
      `requests from the web origin ${JSON.stringify(origin.slice(0, 200))} are refused: it is not this service's own origin and not listed in CORS_ORIGINS`,
    );
  }
  // No Origin: a navigation or a no-cors fetch. A top-level GET navigation (a link to the docs) is
  // harmless; any other cross-site one is refused (web.dev "Resource Isolation Policy").
  if (request.headers.get('sec-fetch-site') === 'cross-site') {
    const navigation = request.headers.get('sec-fetch-mode') === 'navigate' && (request.method === 'GET' || request.method === 'HEAD');
    if (!navigation)
      throw new AppError(
        'forbidden',
        'cross-site browser requests are refused (Sec-Fetch-Site: cross-site without an Origin listed in CORS_ORIGINS)',
      );
  }
  return { corsOrigin: null };
}

/** Own origin: the Origin names the host the request was sent to (scheme aside: TLS may end at a proxy), or PUBLIC_URL's origin. */
function sameOrigin(origin: string, host: URL | null, config: Config): boolean {
  if (origin === new URL(config.publicUrl).origin) return true;
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false; // "null" (sandboxed frames, file: pages) and anything unparsable
  }
  return host !== null && (o.protocol === 'http:' || o.protocol === 'https:') && o.host === host.host;
}

/** Headers every response to an allowed CORS origin carries. */
export function corsHeaders(origin: string): Record<string, string> {
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSE_HEADERS, vary: 'Origin' };
}

/** The preflight's extra headers: what the path allows, the headers clients send, a 10-minute cache. */
export function preflightHeaders(origin: string, allow: string): Record<string, string> {
  return {
    ...corsHeaders(origin),
    'access-control-allow-methods': allow,
    'access-control-allow-headers': ALLOW_HEADERS,
    'access-control-max-age': '600',
  };
}
