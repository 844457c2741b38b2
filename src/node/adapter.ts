// Node edge: adapts node:http to app.fetch. Part of src/node/, the only place besides src/main.ts that touches node:*.
//
// The bridge is @hono/node-server's request listener: measured with bench/adapter.ts it serves the
// same app markedly faster than building a Headers + Request per call and reading every Response
// back through its stream, because its Request and Response are lazy (a GET never builds a Request
// at all; a JSON Response is written from the string it was made with). It replaces the global
// Request/Response with those subclasses once, when nodeListener() is first called (instanceof still
// holds). What this module adds: the client address, invalid header values dropped, a cap-refused
// body not read any further, and the error envelopes.
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener, RequestError, type HttpBindings } from '@hono/node-server';
import type { App } from '../app.ts';
import { createClientCap, type ClientCap } from './clientCap.ts';
import { edgeResponse, refuseParsed, sendEdge } from './edgeAnswer.ts';
import { withDirectBody, type DirectBody } from '../http/body.ts';
import { ConfigError } from '../errors.ts';

export interface AdapterOptions {
  trustProxy: boolean;
  onError?: (err: unknown) => void;
  /** CLIENT_MAX_CONCURRENCY: requests one client address may have open at once (unlimited when absent). */
  clientMaxConcurrency?: number;
  /**
   * HTTP_BODY: how the app reads a request body. 'stream' (the default): through a web ReadableStream
   * over the message (bodyStream). 'direct': straight from the message's chunks into one buffer when
   * the app asks (directBody), with the same cap and the same errors; no stream is built.
   */
  body?: 'stream' | 'direct';
}

function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, '');
}

const envelope = (status: number, code: string, message: string): Response => edgeResponse(status, code, message);

/** Values Headers refuses. Node's strict parser never lets them through; an insecure parser can. */
const INVALID_VALUE = /[\0\r\n]/;

function hasInvalidValue(raw: string[]): boolean {
  for (let i = 1; i < raw.length; i += 2) if (INVALID_VALUE.test(raw[i])) return true;
  return false;
}

/**
 * The request body as a stream read from the IncomingMessage only when the app asks (no data is
 * taken off the socket before the first read). Cancelling it (the app's 1 MB cap) stops reading:
 * the message is paused and let go, and after the answer is sent hono's clean-up discards what
 * still arrives for at most 500 ms / 64 MB before closing the connection, so the client sees the 413
 * instead of a reset. Nothing is buffered beyond the chunk being handed over.
 */
function bodyStream(incoming: IncomingMessage, outgoing: ServerResponse): ReadableStream<Uint8Array> {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let settled = false;
  const onData = (chunk: Buffer) => {
    controller!.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (controller!.desiredSize! <= 0) incoming.pause();
  };
  const onEnd = () => {
    if (release()) controller!.close();
  };
  const onError = (err: unknown) => {
    if (release()) controller!.error(err);
  };
  const onClose = () => onError(new Error('the client closed the connection before the request body ended'));
  // Answered while the app still held the stream: let go of the message, whatever it does next.
  const onFinish = () => onError(new Error('the response was sent before the request body was read'));
  // What the first pull starts listening to and release stops listening to: one list, so the two agree.
  const listeners: Array<[EventEmitter, 'on' | 'once', string, Parameters<EventEmitter['on']>[1]]> = [
    [incoming, 'on', 'data', onData],
    [incoming, 'once', 'end', onEnd],
    [incoming, 'once', 'error', onError],
    [incoming, 'once', 'close', onClose],
    [outgoing, 'once', 'finish', onFinish],
  ];
  const release = (): boolean => {
    if (settled) return false;
    settled = true;
    if (controller) {
      for (const [emitter, , event, listener] of listeners) emitter.off(event, listener);
      incoming.pause();
    }
    return true;
  };
  return new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (!controller) {
          controller = c;
          for (const [emitter, how, event, listener] of listeners) emitter[how](event, listener);
        }
        incoming.resume();
      },
      cancel() {
        release();
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The request body read straight from the IncomingMessage, the first time the app asks (src/http/body.ts
 * readBytes): its chunks gathered into one buffer, nothing taken off the socket before. More than
 * `limit` bytes: reading stops at once ('over'; the message is paused and let go, as bodyStream's
 * cancel does). The same ends as bodyStream: the client closing first or an answer sent before the
 * body was read rejects.
 */
function directBody(incoming: IncomingMessage, outgoing: ServerResponse): DirectBody {
  return (limit) =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let total = 0;
      const onData = (chunk: Buffer) => {
        total += chunk.byteLength;
        if (total > limit) {
          release();
          resolve('over');
        } else chunks.push(chunk);
      };
      const onEnd = () => {
        release();
        const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
        resolve(new Uint8Array(all.buffer, all.byteOffset, all.byteLength));
      };
      const onError = (err: unknown) => {
        release();
        reject(err);
      };
      const onClose = () => onError(new Error('the client closed the connection before the request body ended'));
      const onFinish = () => onError(new Error('the response was sent before the request body was read'));
      const release = () => {
        incoming.off('data', onData);
        incoming.off('end', onEnd);
        incoming.off('error', onError);
        incoming.off('close', onClose);
        outgoing.off('finish', onFinish);
        incoming.pause();
      };
      incoming.on('data', onData);
      incoming.once('end', onEnd);
      incoming.once('error', onError);
      incoming.once('close', onClose);
      outgoing.once('finish', onFinish);
      incoming.resume();
    });
}

/** Header pairs for a Request, leaving out values Headers would throw on. */
function headerPairs(raw: string[]): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < raw.length; i += 2) if (!INVALID_VALUE.test(raw[i + 1])) pairs.push([raw[i], raw[i + 1]]);
  return pairs;
}

/**
 * The request as the app sees it. A GET/HEAD with ordinary headers: hono's lazy request, nothing
 * built. A body, or a header value Headers refuses: a Request of our own (the body still unread).
 */
function toRequest(request: Request, incoming: IncomingMessage, outgoing: ServerResponse, body: AdapterOptions['body']): Request {
  const method = request.method;
  const hasBody = method !== 'GET' && method !== 'HEAD';
  if (!hasBody && !hasInvalidValue(incoming.rawHeaders)) return request;
  if (hasBody && body === 'direct')
    return withDirectBody(new Request(request.url, { method, headers: headerPairs(incoming.rawHeaders) }), directBody(incoming, outgoing));
  return new Request(request.url, {
    method,
    headers: headerPairs(incoming.rawHeaders),
    body: hasBody ? bodyStream(incoming, outgoing) : undefined,
    // @ts-expect-error: duplex is required by Node's fetch for streamed request bodies.
    duplex: hasBody ? 'half' : undefined,
  });
}

/** Methods node:http parses but no fetch Request can carry: the core's 405 is sent for them directly. */
const UNFETCHABLE = new Set(['TRACE', 'TRACK', 'CONNECT']);

/** HTTP_BODY from the environment: stream (default) or direct (AdapterOptions.body). */
export function httpBodyMode(env: Record<string, string | undefined>): 'stream' | 'direct' {
  const raw = env.HTTP_BODY;
  if (raw === undefined || raw === '' || raw === 'stream') return 'stream';
  if (raw === 'direct') return 'direct';
  throw new ConfigError('HTTP_BODY', `must be stream or direct, got ${JSON.stringify(raw)}`);
}

/** A request listener for node:http that serves app.fetch. */
export function nodeListener(app: App, opts: AdapterOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const cap = opts.clientMaxConcurrency === undefined ? null : createClientCap(opts.clientMaxConcurrency);
  const listener = nodeFetchListener(app, opts, cap);
  return async (req, res) => {
    const refused = refuseParsed(req);
    if (refused) {
      // The parser's view of this request is incomplete or unframed: answer and close.
      res.shouldKeepAlive = false;
      return sendEdge(res, refused.status, refused.code, refused.message);
    }
    if (cap) {
      const client = clientIp(req, opts.trustProxy);
      if (!cap.enter(client)) {
        const r = capRefusal(opts.clientMaxConcurrency!);
        return sendEdge(res, 429, 'rate_limited', r.message, r.headers);
      }
      // 'close' fires once whether the answer was sent or the client went away first.
      res.once('close', () => cap.leave(client));
    }
    if (!UNFETCHABLE.has(req.method ?? '')) return listener(req, res);
    const answer = app.refuseMethod(req.method!, req.url ?? '/');
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(await answer.text());
  };
}

/**
 * node:http hands CONNECT to the server's 'connect' event with the raw socket (no listener: the
 * socket is simply destroyed). Answer it with the 405 envelope and close: this is no proxy.
 */
export function connectListener(app: App): (req: IncomingMessage, socket: import('node:stream').Duplex) => void {
  return (req, socket) => {
    socket.on('error', () => socket.destroy());
    const answer = app.refuseMethod('CONNECT', req.url ?? '');
    void answer.text().then((body) => {
      const head = [
        'HTTP/1.1 405 Method Not Allowed',
        ...[...answer.headers].map(([k, v]) => `${k}: ${v}`),
        `content-length: ${Buffer.byteLength(body)}`,
        'connection: close',
      ];
      socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
    });
  };
}

/** The path of a request target as sent (origin form `/p?q`, or absolute form `http://h/p?q`). */
function rawPathOf(target: string): string {
  const path = target.split('?', 1)[0];
  if (path.startsWith('/')) return path;
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*(\/.*)?$/.exec(path);
  return m?.[1] ?? '/';
}

/** The cap's 429: its message and headers, for a request at the edge and for an MCP batch's call alike. */
function capRefusal(max: number): { message: string; headers: Record<string, string> } {
  return {
    message: `this client already has ${max} requests open, the most CLIENT_MAX_CONCURRENCY allows at once; wait for answers before sending more`,
    headers: { 'retry-after': '1', 'ratelimit-limit': String(max), 'ratelimit-remaining': '0', 'ratelimit-reset': '1' },
  };
}

/** RequestInfo.admit for one client: a further place under the cap, or the cap's 429. */
export function admitter(cap: ClientCap, client: string, max: number): () => (() => void) | Response {
  return () => {
    if (cap.enter(client)) return () => cap.leave(client);
    const r = capRefusal(max);
    return edgeResponse(429, 'rate_limited', r.message, r.headers);
  };
}

function nodeFetchListener(
  app: App,
  opts: AdapterOptions,
  cap: ClientCap | null,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return getRequestListener(
    async (request, env) => {
      const { incoming, outgoing } = env as HttpBindings;
      let response: Response;
      try {
        const ip = clientIp(incoming, opts.trustProxy);
        response = await app.fetch(toRequest(request, incoming, outgoing, opts.body), {
          ip,
          rawPath: rawPathOf(incoming.url ?? '/'),
          ...(cap ? { admit: admitter(cap, ip, opts.clientMaxConcurrency!) } : {}),
        });
      } catch (err) {
        opts.onError?.(err);
        response = envelope(500, 'internal', 'Internal error.');
      }
      return response;
    },
    {
      // Kept on (the default): after the answer, a body not read to its end is discarded for at most
      // 500 ms / 64 MB and then the connection is closed.
      autoCleanupIncoming: true,
      // Without a Host header (HTTP/1.0) the URL's authority is this; it is never routed on.
      hostname: 'localhost',
      errorHandler(err) {
        // A request line or Host header no URL can be made of: the client's fault, not ours.
        if (err instanceof RequestError) return envelope(400, 'bad_request', `malformed request: ${err.message}`);
        opts.onError?.(err);
        return envelope(500, 'internal', 'Internal error.');
      },
    },
  );
}
