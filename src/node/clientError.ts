// Requests Node's HTTP parser refuses before app.fetch ever sees them (two Content-Length headers,
// Content-Length with chunked, headers over 16 KB, an HTTP/2 preface, a broken request line, a
// slow-loris socket timed out): answered with the same JSON error envelope and x-request-id as
// every other error, then the connection is closed, because after a parse error the rest of the
// byte stream cannot be trusted to frame further requests (RFC 9112 §2.2, request smuggling).
import { STATUS_CODES } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';

type ParserError = Error & { code?: string; reason?: string };

/** Status, error code and message for a parser refusal (Node's own defaults: 431, 408, else 400). */
export function classifyClientError(err: ParserError): { status: number; code: string; message: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'headers_too_large', message: 'the request line and headers together are over 16 KB' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'request_timeout',
        message: 'the request did not arrive in time (headers within 10 s, the whole request within 60 s)',
      };
    case 'HPE_PAUSED_H2_UPGRADE':
      return {
        status: 400,
        code: 'bad_request',
        message: 'malformed HTTP request: HTTP/2 with prior knowledge is not served here; use HTTP/1.1',
      };
    default: {
      const why = err.reason ?? err.message.replace(/^Parse Error: /, '');
      return { status: 400, code: 'bad_request', message: `malformed HTTP request: ${why}` };
    }
  }
}

/** The 'clientError' listener for a node:http server. */
export function answerClientError(err: ParserError, socket: Duplex): void {
  // A response already started on this socket (a timeout mid-answer) cannot be followed by
  // another; a reset connection has no one to answer.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { status, code, message } = classifyClientError(err);
  const body = JSON.stringify({ error: { code, message, docsUrl: `/docs/errors#${code}` } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${randomUUID()}\r\n` +
      'x-content-type-options: nosniff\r\n' +
      'connection: close\r\n\r\n' +
      body,
  );
  // end() flushes and half-closes; the client gets a moment to read the answer (closing at once
  // with its unread bytes pending can turn into a reset that discards it), then the socket goes.
  setTimeout(() => socket.destroy(), 1_000).unref();
}
