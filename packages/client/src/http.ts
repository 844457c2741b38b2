// The API client's transport: one fetch per call, the bearer key, and ApiError from the error envelope. Web APIs only.
import { type ErrorCode, readErrorEnvelope } from '@escrow-settlement/protocol/errors';

/**
 * An error code: one the protocol package defines (ERROR_STATUS), or `http_<status>` when the answer
 * carried no envelope (a proxy's page), or a code a newer service added.
 */
export type ApiErrorCode = ErrorCode | `http_${number}` | (string & {});

/** A non-2xx answer, read from the envelope {error: {code, message, docsUrl}}. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly docsUrl?: string;
  /** The x-request-id the service answered with: quote it to the operator. */
  readonly requestId?: string;
  /** The whole parsed body (a 402 also carries x402Version and accepts). */
  readonly body: unknown;
  readonly headers: Headers;
  constructor(
    status: number,
    code: ApiErrorCode,
    message: string,
    extra: { docsUrl?: string; requestId?: string; body?: unknown; headers?: Headers } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.docsUrl = extra.docsUrl;
    this.requestId = extra.requestId;
    this.body = extra.body;
    this.headers = extra.headers ?? new Headers();
  }
}

/** Any fetch: the global one, or one that answers in-process (`(req) => app.fetch(req)`). */
export type FetchLike = (request: Request) => Promise<Response>;

export interface ClientOptions {
  /** Where the service is, e.g. "http://127.0.0.1:4280" (a path prefix is kept). */
  baseUrl: string;
  /** Bearer key for hosted deployments; omit for an open sandbox. */
  apiKey?: string;
  fetch?: FetchLike;
}

export interface CallInput {
  params?: Record<string, string | number>;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** 'text' for the non-JSON routes (checkpoint, errors page); 'bytes' for tiles (a Uint8Array). */
  as?: 'json' | 'text' | 'bytes';
}

export interface Answer<T> {
  data: T;
  status: number;
  headers: Headers;
}

export type Transport = <T>(route: string, input?: CallInput) => Promise<Answer<T>>;

function pathOf(pattern: string, params: Record<string, string | number> = {}): string {
  return pattern.replace(/:(\w+)(\+?)/g, (_, name: string, greedy: string) => {
    const v = params[name];
    if (v === undefined || v === '') throw new TypeError(`${name} is required`);
    // A greedy `:name+` (a tile path) spans segments: each is encoded, the slashes kept.
    return greedy ? String(v).split('/').map(encodeURIComponent).join('/') : encodeURIComponent(String(v));
  });
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The transport every method uses: `route` is "METHOD /path/:param", as the service's route table names it.
 * `onServiceNow` receives each answer's `x-service-now` header (the service's clock) when it carries one.
 */
export function createTransport(opts: ClientOptions, onServiceNow?: (serviceNow: string) => void): Transport {
  if (typeof opts?.baseUrl !== 'string') throw new TypeError('baseUrl must be a URL string, e.g. "http://127.0.0.1:4280"');
  const base = new URL(opts.baseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  const doFetch: FetchLike = opts.fetch ?? ((req) => globalThis.fetch(req));
  return async function call<T>(route: string, input: CallInput = {}): Promise<Answer<T>> {
    const [method, pattern] = route.split(' ');
    const url = new URL(base.origin + prefix + pathOf(pattern, input.params));
    for (const [k, v] of Object.entries(input.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers = new Headers(input.headers);
    headers.set(
      'accept',
      input.as === 'text' ? 'text/plain, text/html, */*' : input.as === 'bytes' ? 'application/octet-stream' : 'application/json',
    );
    if (opts.apiKey !== undefined) headers.set('authorization', `Bearer ${opts.apiKey}`);
    const init: RequestInit = { method, headers };
    if (input.body !== undefined) {
      headers.set('content-type', 'application/json');
      init.body = JSON.stringify(input.body);
    }
    const res = await doFetch(new Request(url, init));
    const serviceNow = res.headers.get('x-service-now');
    if (serviceNow !== null) onServiceNow?.(serviceNow);
    const requestId = res.headers.get('x-request-id') ?? undefined;
    if (!res.ok) {
      const body = await readBody(res);
      const e = readErrorEnvelope(body);
      const code = e?.code ?? `http_${res.status}`;
      const message = e?.message ?? `${method} ${url.pathname} answered ${res.status}`;
      throw new ApiError(res.status, code, message, { docsUrl: e?.docsUrl, requestId, body, headers: res.headers });
    }
    const data = (
      input.as === 'text' ? await res.text() : input.as === 'bytes' ? new Uint8Array(await res.arrayBuffer()) : await readBody(res)
    ) as T;
    return { data, status: res.status, headers: res.headers };
  };
}
