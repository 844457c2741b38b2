// Raw HTTP/1.1 over a socket, for what node:http and fetch refuse to send: the malformed requests
// Node's parser refuses (docs/protocol.md §19.3), and what the service must answer to each.
import assert from 'node:assert/strict';
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (within the wait). */
  closed: boolean;
}

/** Writes `raw` on a fresh socket and reads until the server closes it (or `waitMs` passes). */
export function rawExchange(url: string, raw: string | Buffer, waitMs = 5_000): Promise<RawAnswer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname === '0.0.0.0' ? '127.0.0.1' : u.hostname, () => sock.write(raw));
    const chunks: Buffer[] = [];
    let closed = false;
    const done = () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
      if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      const headers: Record<string, string> = {};
      for (const line of m[2].split('\r\n')) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(m[1]), headers, body: m[3], closed });
    };
    const timer = setTimeout(() => {
      sock.destroy();
      done();
    }, waitMs);
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', () => {}); // a reset after the answer still leaves the answer to judge
    sock.on('close', () => {
      closed = true;
      done();
    });
  });
}

export const MALFORMED: Array<{ name: string; raw: string; status: number; code: string; message: RegExp }> = [
  {
    name: 'two Content-Length headers',
    raw: 'POST /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    status: 400,
    code: 'bad_request',
    message: /Duplicate Content-Length/,
  },
  {
    name: 'Content-Length with chunked',
    raw: 'POST /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    status: 400,
    code: 'bad_request',
    message: /Transfer-Encoding can't be present with Content-Length/,
  },
  {
    name: 'headers over 16 KB',
    raw: `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'y'.repeat(20_000)}\r\n\r\n`,
    status: 431,
    code: 'headers_too_large',
    message: /over 16 KB/,
  },
  {
    name: 'a request line over 16 KB',
    raw: `GET /v1/escrows/esc_${'x'.repeat(17_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    status: 431,
    code: 'headers_too_large',
    message: /over 16 KB/,
  },
  {
    name: 'an HTTP/2 preface',
    raw: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    status: 400,
    code: 'bad_request',
    message: /HTTP\/2 with prior knowledge/,
  },
  {
    name: 'a malformed request line',
    raw: 'GET /health HTTP/1.1 EXTRA\r\nHost: 127.0.0.1\r\n\r\n',
    status: 400,
    code: 'bad_request',
    message: /malformed HTTP request/,
  },
  {
    name: 'TLS sent to the plain port',
    raw: '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03',
    status: 400,
    code: 'bad_request',
    message: /malformed HTTP request: Invalid method/,
  },
];

/** Asserts the answer to one malformed request. */
export async function assertRefused(url: string, c: (typeof MALFORMED)[number]): Promise<void> {
  const a = await rawExchange(url, c.raw);
  assert.equal(a.status, c.status, c.name);
  assert.equal(a.headers['content-type'], 'application/json; charset=utf-8', c.name);
  assert.match(a.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/, `${c.name}: x-request-id`);
  assert.equal(a.headers.connection, 'close', c.name);
  assert.equal(Number(a.headers['content-length']), Buffer.byteLength(a.body), c.name);
  const body = JSON.parse(a.body);
  assert.deepEqual(Object.keys(body.error), ['code', 'message', 'docsUrl'], c.name);
  assert.equal(body.error.code, c.code, c.name);
  assert.equal(body.error.docsUrl, `/docs/errors#${c.code}`);
  assert.match(body.error.message, c.message, c.name);
  assert.ok(a.closed, `${c.name}: the connection is closed after the answer`);
}
