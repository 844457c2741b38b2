// A JSON-RPC 2.0 client for an EVM node over fetch (Web APIs only): one call per request,
// a time limit per call, node errors kept with their code and revert data.

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface RpcOptions {
  fetch?: FetchLike;
  /** Per-call time limit (default 10 000 ms). */
  timeoutMs?: number;
}

/** A JSON-RPC error answer from the node (or a transport failure, code null). */
export class RpcError extends Error {
  constructor(
    readonly method: string,
    message: string,
    readonly code: number | null = null,
    readonly data?: unknown,
  ) {
    super(`${method}: ${message}`);
    this.name = 'RpcError';
  }
}

export interface Rpc {
  readonly url: string;
  call<T = unknown>(method: string, params?: unknown[]): Promise<T>;
}

export function createRpc(url: string, opts: RpcOptions = {}): Rpc {
  const doFetch: FetchLike = opts.fetch ?? ((i, init) => fetch(i, init));
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let id = 0;
  return {
    url,
    async call<T>(method: string, params: unknown[] = []): Promise<T> {
      let res: Response;
      try {
        res = await doFetch(url, {
          method: 'POST',
          // One connection per call: a dev node (ganache) drops idle keep-alive sockets, and a
          // POST on a socket it just closed fails with no way to know whether it was received.
          headers: { 'content-type': 'application/json', connection: 'close' },
          body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'error',
        });
      } catch (err) {
        const cause = (err as { cause?: { message?: string } }).cause?.message;
        throw new RpcError(method, `cannot reach the chain RPC (${(err as Error).message}${cause ? `: ${cause}` : ''})`);
      }
      const text = await res.text().catch(() => '');
      let body: { result?: unknown; error?: { code?: number; message?: string; data?: unknown } };
      try {
        body = JSON.parse(text);
      } catch {
        throw new RpcError(method, `HTTP ${res.status}: the answer is not JSON-RPC`);
      }
      if (body?.error) throw new RpcError(method, String(body.error.message ?? 'error'), body.error.code ?? null, body.error.data);
      if (!res.ok || !('result' in (body ?? {}))) throw new RpcError(method, `HTTP ${res.status}: the answer has no result`);
      return body.result as T;
    },
  };
}
