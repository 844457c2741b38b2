// Same-origin calls to the service, through the typed client: its methods return the protocol
// package's wire types and reject with its ApiError, read from the error envelope the same way every
// client reads it. In hosted mode the bearer key lives in sessionStorage only (gone when the tab
// closes; never in localStorage, never in a cookie).
import { createClient } from '@escrow-settlement/client/api';
import { ApiError } from '@escrow-settlement/client/http';

export { ApiError };

const KEY = 'escrow-console.key';

export const hosted = () => document.querySelector('meta[name="console-mode"]')?.getAttribute('content') === 'hosted';
export const getKey = () => sessionStorage.getItem(KEY);
export const setKey = (k: string) => sessionStorage.setItem(KEY, k);
export const forgetKey = () => sessionStorage.removeItem(KEY);

/**
 * The page's fetch: the key is read at each call (the key gate sets it after the client exists),
 * no cookie is sent (`credentials: 'omit'`) and no answer is served from the HTTP cache, so a
 * polled escrow is always the service's current state.
 */
function pageFetch(req: Request): Promise<Response> {
  const headers = new Headers(req.headers);
  const key = getKey();
  if (key) headers.set('authorization', `Bearer ${key}`);
  return fetch(req, { headers, credentials: 'omit', cache: 'no-store' });
}

export const api = createClient({ baseUrl: location.origin, fetch: pageFetch });
