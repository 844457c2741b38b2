// Same-origin calls to the service. In hosted mode the bearer key lives in sessionStorage only
// (gone when the tab closes; never in localStorage, never in a cookie).
const KEY = 'escrow-console.key';

export const hosted = () => document.querySelector('meta[name="console-mode"]')?.getAttribute('content') === 'hosted';
export const getKey = () => sessionStorage.getItem(KEY);
export const setKey = (k: string) => sessionStorage.setItem(KEY, k);
export const forgetKey = () => sessionStorage.removeItem(KEY);

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export async function call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const key = getKey();
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  const text = await res.text();
  if (!res.ok) {
    let code = 'http_' + res.status;
    let message = text.slice(0, 300);
    try {
      const e = JSON.parse(text).error;
      code = e.code;
      message = e.message;
    } catch { /* not an envelope */ }
    throw new ApiError(res.status, code, message);
  }
  const type = res.headers.get('content-type') ?? '';
  return (type.includes('json') ? JSON.parse(text) : text) as T;
}

export const get = <T = any>(path: string) => call<T>('GET', path);
export const post = <T = any>(path: string, body?: unknown) => call<T>('POST', path, body);
