// How a webhook POST leaves the process: the injected transport's shape and the Web-APIs default (docs/protocol.md §14.3).
import { isIp, isLocalhostName, isPrivateAddress } from './address.ts';

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE: when false the transport must refuse private destinations at connect time. */
  allowPrivate: boolean;
}

/** A status means the receiver answered (success is 2xx); an error means no answer (refused, timeout, network). */
export type WebhookResult = { status: number } | { error: string };

export type WebhookTransport = (req: WebhookRequest) => Promise<WebhookResult>;

/** Resolves a host name to its addresses (registration-time SSRF check); throws when it does not resolve. */
export type ResolveHost = (host: string) => Promise<string[]>;

/** The URL's host without IPv6 brackets or a trailing dot: what an address check looks at. */
export function hostOf(url: URL): string {
  const h = url.hostname;
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

/**
 * Why a host is refused before any DNS lookup, or null. Only literal IPs and localhost names can be
 * judged here; a name's addresses are checked by the resolver (registration) or at connect time.
 */
export function literalRefusal(host: string): string | null {
  if (isLocalhostName(host)) return `host ${host} is this machine`;
  if (isIp(host) && isPrivateAddress(host)) return `host ${host} is not a public address`;
  return null;
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timeout';
  return String(e?.cause?.code ?? e?.cause?.message ?? e?.message ?? err).slice(0, 500);
}

/**
 * The core default: fetch, with redirects never followed (a 3xx is a failed attempt, so a receiver
 * cannot bounce the sender to an internal address) and the whole exchange bounded by timeoutMs.
 * Web APIs cannot hook DNS, so only literal private IPs and localhost names are refused here; the Node
 * edge injects src/node/webhookTransport.ts, which checks every resolved address at connect time.
 */
export function fetchTransport(fetchImpl: typeof fetch = fetch): WebhookTransport {
  return async (req) => {
    if (!req.allowPrivate) {
      const refused = literalRefusal(hostOf(new URL(req.url)));
      if (refused) return { error: `refused: ${refused} (WEBHOOK_ALLOW_PRIVATE is off)` };
    }
    try {
      const res = await fetchImpl(req.url, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(req.timeoutMs),
      });
      // The answer's body is not needed: let the connection go instead of reading it.
      await res.body?.cancel().catch(() => {});
      // A browser-style opaque redirect reports status 0; it is a failure like any 3xx.
      return { status: res.status };
    } catch (err) {
      return { error: describe(err) };
    }
  };
}
