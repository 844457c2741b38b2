// The Node webhook transport: node:http(s) with the SSRF check at connect time (DNS rebinding cannot pass).
// Imported only by the Node edge (src/node/start.ts); the core stays on Web APIs (docs/design.md §1).
import { Agent as HttpAgent, request as httpRequest, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, promises as dnsPromises, type LookupAddress, type LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { isPrivateAddress } from '../webhooks/address.ts';
import { hostOf, literalRefusal, type ResolveHost, type WebhookTransport } from '../webhooks/transport.ts';

/** What the receiver's answer body may cost us after its status is known: it is read and thrown away. */
const MAX_DRAIN_BYTES = 64 * 1024;

class RefusedAddress extends Error {
  readonly code = 'EREFUSED_PRIVATE';
}

/** Every address of a name (dns.lookup with all: true); injectable so tests can play a rebinding DNS. */
export type LookupAll = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemLookupAll: LookupAll = (hostname, options, callback) => dnsLookup(hostname, { ...options, all: true }, callback);

/**
 * A dns.lookup wrapper that fails the connection when any resolved address is not public. It runs at
 * connect time inside net.connect, so the address checked is the address connected to: a name that
 * resolved publicly at registration and privately now (DNS rebinding) is refused here.
 */
export function guardedLookup(lookupAll: LookupAll = systemLookupAll): LookupFunction {
  return (hostname, options, callback) => {
    lookupAll(hostname, options, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const bad = addresses.find((a) => isPrivateAddress(a.address));
      if (bad || addresses.length === 0) {
        return callback(new RefusedAddress(`host ${hostname} resolves to ${bad?.address ?? 'nothing'}, not a public address`), '', 0);
      }
      // Node 20's happy-eyeballs connect asks for every address; a plain connect asks for one.
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** Registration-time resolver for the route's SSRF check (every address the name has). */
export const nodeResolveHost: ResolveHost = async (host) => {
  const answers = await dnsPromises.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

/**
 * node:http(s) POST: no redirects (node:http never follows them; a 3xx is a failed attempt), one
 * deadline over lookup + connect + TLS + headers, keep-alive agents so a busy receiver reuses its
 * connections (a pooled socket was checked when it connected).
 */
export function createNodeTransport(opts: { lookupAll?: LookupAll } = {}): WebhookTransport {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const lookup = guardedLookup(opts.lookupAll);
  return (req) =>
    new Promise((resolve) => {
      let url: URL;
      try {
        url = new URL(req.url);
      } catch {
        return resolve({ error: 'invalid url' });
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return resolve({ error: `unsupported scheme ${url.protocol}` });
      if (!req.allowPrivate) {
        // net.connect skips the lookup hook for literal IPs, so those are judged here.
        const refused = literalRefusal(hostOf(url));
        if (refused) return resolve({ error: `refused: ${refused} (WEBHOOK_ALLOW_PRIVATE is off)` });
      }
      const https = url.protocol === 'https:';
      const options: RequestOptions = {
        method: 'POST',
        headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
        agent: https ? agents.https : agents.http,
        ...(req.allowPrivate ? {} : { lookup }),
      };
      let settled = false;
      const finish = (r: { status: number } | { error: string }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const outgoing = (https ? httpsRequest : httpRequest)(url, options, (res) => {
        finish({ status: res.statusCode ?? 0 });
        let seen = 0;
        const drainTimer = setTimeout(() => res.destroy(), req.timeoutMs);
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_DRAIN_BYTES) res.destroy();
        });
        res.on('close', () => clearTimeout(drainTimer));
        res.on('error', () => {});
      });
      const timer = setTimeout(() => {
        outgoing.destroy();
        finish({ error: 'timeout' });
      }, req.timeoutMs);
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof RefusedAddress) finish({ error: `refused: ${err.message} (WEBHOOK_ALLOW_PRIVATE is off)` });
        else finish({ error: String(err.code ?? err.message).slice(0, 500) });
      });
      outgoing.end(req.body);
    });
}
