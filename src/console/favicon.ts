// The icon browsers ask every site for (/favicon.ico) whether or not a page links one: without it
// each console visit logged a 404. A 32×32 PNG inside an ICO container (ICO allows PNG entries), the
// console header's navy with a white check mark, small enough to keep inline.
const B64 =
  'AAABAAEAICAAAAEAIACqAAAAFgAAAIlQTkcNChoKAAAADUlIRFIAAAAgAAAAIAgGAAAAc3p69AAAAHFJREFUeNpjYBgFgwmIKOj8pwcedcCoA0YdMOqAkeMAEBgwB8DAgDgAGdDdAYQsJ8sB+Awj1XKyHUDIUGItp8gBuAwnxXKy0wAuS0i1nKJEiG4ZOZZTnAuwAbqXhJRYTrVygFzLR2vDUQfgdcAoGAgAABpeFLLVwfTuAAAAAElFTkSuQmCC';

export const FAVICON: Uint8Array<ArrayBuffer> = Uint8Array.from(atob(B64), (c) => c.charCodeAt(0));

/** The icon, cacheable for a day (it changes only with a deployment, and nothing breaks if stale). */
export const faviconResponse = () =>
  new Response(FAVICON, {
    headers: { 'content-type': 'image/x-icon', 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
  });
