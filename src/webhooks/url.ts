// Which webhook URLs registration accepts: absolute http(s), ≤ 2048 chars, public hosts unless allowed (docs/protocol.md §14.4).
import { badRequest } from '../errors.ts';
import { isPrivateAddress, parseIp } from './address.ts';
import { hostOf, literalRefusal, type ResolveHost } from './transport.ts';
import { canonicalUrl } from './canonicalUrl.ts';

export const MAX_URL_LENGTH = 2048;

/**
 * The URL in its canonical form (src/webhooks/canonicalUrl.ts: WHATWG serialisation, no fragment or
 * empty query, percent-encoding normalised), so two spellings of one endpoint register once and
 * collide on "one owner per URL". Every refusal is a 400 naming `url`.
 */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw badRequest(`url must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest('url must be an absolute http(s) URL, e.g. "https://example.com/hooks/escrow"');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw badRequest(`url must use http or https, not ${url.protocol.replace(/:$/, '')}`);
  if (!url.hostname) throw badRequest('url must name a host');
  // fetch refuses URLs with credentials, and they would sit in the registration list in clear.
  if (url.username || url.password) throw badRequest('url must not contain credentials (user:password@)');
  const canonical = new URL(canonicalUrl(url));
  if (canonical.href.length > MAX_URL_LENGTH) throw badRequest(`url must be at most ${MAX_URL_LENGTH} characters once normalised`);
  return canonical;
}

/**
 * With WEBHOOK_ALLOW_PRIVATE off, refuses a URL whose host is, or resolves to, a non-public address
 * (docs/protocol.md §14.4). A name is refused if ANY of its addresses is private: the sender could
 * connect to any of them. Delivery checks again at connect time; this check gives the early 400.
 */
export async function checkDestination(url: URL, allowPrivate: boolean, resolveHost?: ResolveHost): Promise<void> {
  if (allowPrivate) return;
  const host = hostOf(url);
  const refused = literalRefusal(host);
  if (refused)
    throw badRequest(`url ${refused}; this deployment delivers webhooks to public addresses only (WEBHOOK_ALLOW_PRIVATE is off)`);
  if (parseIp(host) || !resolveHost) return;
  let addresses: string[];
  try {
    addresses = await resolveHost(host);
  } catch (err) {
    const code = (err as { code?: string })?.code;
    throw badRequest(`url host ${host} could not be resolved${code ? ` (${code})` : ''}`);
  }
  const bad = addresses.find((a) => parseIp(a) === null || isPrivateAddress(a));
  if (bad || addresses.length === 0) {
    throw badRequest(
      `url host ${host} resolves to ${bad ?? 'no address'}, not a public address; this deployment delivers webhooks to public addresses only (WEBHOOK_ALLOW_PRIVATE is off)`,
    );
  }
}
