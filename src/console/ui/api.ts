// Same-origin calls to the service. In hosted mode the bearer key lives in sessionStorage only
// (gone when the tab closes; never in localStorage, never in a cookie).
import { ApiError } from '@escrow-settlement/client/http';
import { readErrorEnvelope } from '@escrow-settlement/protocol/errors';

export { ApiError };

const KEY = 'escrow-console.key';

export const hosted = () => document.querySelector('meta[name="console-mode"]')?.getAttribute('content') === 'hosted';
export const getKey = () => sessionStorage.getItem(KEY);
export const setKey = (k: string) => sessionStorage.setItem(KEY, k);
export const forgetKey = () => sessionStorage.removeItem(KEY);

export async function call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const key = getKey();
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  const text = await res.text();
  if (!res.ok) {
    // The envelope, read as the typed client reads it: one error contract from the service to the browser.
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const e = readErrorEnvelope(body);
    throw new ApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? text.slice(0, 300), {
      docsUrl: e?.docsUrl, requestId: res.headers.get('x-request-id') ?? undefined, body, headers: res.headers,
    });
  }
  const type = res.headers.get('content-type') ?? '';
  return (type.includes('json') ? JSON.parse(text) : text) as T;
}

export const get = <T = any>(path: string) => call<T>('GET', path);
export const post = <T = any>(path: string, body?: unknown) => call<T>('POST', path, body);
