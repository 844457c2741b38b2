// One spelling per webhook endpoint: the form registrations are stored, compared and signed in
// (docs/security.md "Webhook URL identity"). Web APIs only.
//
// Two URLs that reach the same endpoint must compare equal, or "one owner per URL" is bypassed by
// another spelling. The WHATWG URL serialisation already lowercases the scheme and host, drops the
// default port, resolves dot segments (also %2e ones) and decodes IPv4 forms; on top of it:
//  - the fragment is dropped (it never leaves the client: RFC 9110 §7.1), an empty query `?` too;
//  - a host's trailing dot (an absolute DNS name, the same host) is dropped;
//  - percent-encoding is normalised as RFC 3986 §6.2.2.1-2 says: unreserved characters
//    (ALPHA DIGIT - . _ ~) are decoded, every other escape gets uppercase hex digits. Escapes of
//    reserved characters (`%2F`) stay escaped: they mean something else than the character.

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** RFC 3986 §6.2.2.1-2 on one component: decode unreserved escapes, uppercase the others. */
function normaliseEscapes(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}

/**
 * The canonical form of an absolute URL that `new URL` accepts (the caller has checked scheme,
 * host and credentials). Idempotent: canonicalUrl(canonicalUrl(x)) === canonicalUrl(x).
 */
export function canonicalUrl(input: URL | string): string {
  const url = new URL(typeof input === 'string' ? input : input.href);
  url.hash = '';
  if (url.hostname.endsWith('.') && !url.hostname.startsWith('[')) url.hostname = url.hostname.replace(/\.+$/, '');
  url.pathname = normaliseEscapes(url.pathname);
  // `search` is '' both for no query and for an empty one; setting '' drops the lone `?`.
  url.search = url.search === '' ? '' : normaliseEscapes(url.search);
  // Decoding may have produced text the parser would spell otherwise (a decoded `.` forming a dot
  // segment, say): one more parse settles it, and a second pass is then the identity.
  const again = new URL(url.href);
  if (again.search === '') again.search = '';
  again.hash = '';
  let href = again.href;
  if (href.endsWith('#')) href = href.slice(0, -1);
  return href;
}
