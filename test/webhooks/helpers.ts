// Test receivers (real node:http servers on 127.0.0.1) and helpers that drive the webhook sender directly.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeHarness, type Harness, type StoreKind } from '../harness.ts';
import type { AppDeps } from '../../src/app.ts';
import { sendDueOnce } from '../../src/jobs/webhooks.ts';
import { webhookMetrics } from '../../src/webhooks/metrics.ts';
import type { Services } from '../../src/services.ts';

export interface Received {
  body: string;
  headers: Record<string, string>;
}

/** What a receiver does with its n-th request (0-based): answer a status, or hold the request open. */
export type Behaviour = (n: number, req: Received) => number | 'hang' | Promise<number | 'hang'>;

export interface Receiver {
  url: string;
  /** Every request whose handler answered (hung requests are not recorded). */
  got: Received[];
  /** Every request that arrived, answered or not. */
  seen: number;
  /** Requests open right now (arrived, not yet answered or dropped), and the most ever open at once. */
  open: number;
  maxOpen: number;
  behaviour: Behaviour;
  close(): Promise<void>;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real receiver on 127.0.0.1:<port 0>; `behaviour` can be swapped at any time. */
export async function receiver(behaviour: Behaviour = () => 200, port = 0): Promise<Receiver> {
  const hung: ServerResponse[] = [];
  const r: Receiver = { url: '', got: [], seen: 0, open: 0, maxOpen: 0, behaviour, close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    r.open++;
    r.maxOpen = Math.max(r.maxOpen, r.open);
    res.on('close', () => r.open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const received: Received = { body: Buffer.concat(chunks).toString('utf8'), headers: req.headers as Record<string, string> };
      const n = r.seen++;
      const out = await r.behaviour(n, received);
      if (out === 'hang') {
        hung.push(res);
        return;
      }
      if (res.destroyed) return;
      r.got.push(received);
      res.writeHead(out, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  r.close = async () => {
    for (const res of hung) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return r;
}

export const pending = async (svc: Services) => (await webhookMetrics(svc.db)).pending;

/** Runs sender passes until the outbox is empty (retries are due after the harness's short backoff). */
export async function drain(svc: Services, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await sendDueOnce(svc);
    if (r.claimed === 0) {
      if ((await pending(svc)) === 0) return;
      if (Date.now() > until) throw new Error(`outbox not drained in ${timeoutMs} ms: ${await pending(svc)} pending`);
      await sleep(5);
    }
  }
}

/** Waits until `cond` holds (polling), or throws with `what`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Registers the receivers' URLs; returns the signing key to pin. */
export async function register(h: Harness, ...urls: string[]): Promise<string> {
  let key = '';
  for (const url of urls) {
    const r = await h.req('POST', '/v1/webhooks', { url });
    if (r.status !== 201) throw new Error(`register ${url}: ${r.status} ${r.text}`);
    key = r.body.signingKey;
  }
  return key;
}

export async function unregister(h: Harness, ...urls: string[]): Promise<void> {
  for (const url of urls) await h.req('DELETE', '/v1/webhooks', { url });
}

export async function eventsOf(h: Harness, escrowId: string): Promise<any[]> {
  return (await h.req('GET', `/v1/escrows/${escrowId}/events`)).body.events;
}

/** A harness whose app gets extra dependencies (a transport, a resolver). */
export const harnessWith = (kind: StoreKind, env: Record<string, string>, deps: Partial<AppDeps>): Promise<Harness> =>
  makeHarness(kind, env, undefined, deps);

/** How a receiver orders one escrow's events: the webhook-id is `<escrowId>_<n>`, n its trail position. */
export const position = (g: { headers: Record<string, string> }) => {
  const id = g.headers['webhook-id'];
  const cut = id.lastIndexOf('_');
  return { escrowId: id.slice(0, cut), n: Number(id.slice(cut + 1)) };
};
export const inTrailOrder = <T extends { headers: Record<string, string> }>(got: T[]) =>
  [...got].sort((a, b) => {
    const x = position(a);
    const y = position(b);
    return x.escrowId === y.escrowId ? x.n - y.n : x.escrowId < y.escrowId ? -1 : 1;
  });
