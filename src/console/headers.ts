// Response headers of every page and asset the console serves: a strict Content-Security-Policy
// (no inline script or style, same-origin only, never framed) and no sniffing or referrers.
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

const COMMON = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** An HTML page: never cached, so a new deployment's asset names are picked up at once. */
export const htmlResponse = (html: string, status = 200) =>
  new Response(html, { status, headers: { ...COMMON, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' } });

/** A content-hashed asset: its name changes with its bytes, so it may be cached for good. */
export const assetResponse = (body: string, type: string) =>
  new Response(body, { headers: { ...COMMON, 'content-type': type, 'cache-control': 'public, max-age=31536000, immutable' } });

export const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
