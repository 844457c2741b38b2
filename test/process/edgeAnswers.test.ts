// The answers the Node edge gives by itself: a missing Host, header lines past the parser's count,
// `OPTIONS *`, a backslash in the target, every parser refusal; and the per-client concurrency cap.
// Each carries the JSON envelope, an x-request-id and nosniff (docs/security.md "The edge").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { startService, TSX, type Proc } from './proc.ts';
import { MALFORMED, rawExchange } from './rawHttp.ts';

const EDGE_CASES: Array<{ name: string; raw: string; status: number; code: string; message: RegExp }> = [
  {
    name: 'HTTP/1.1 without Host',
    raw: 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n',
    status: 400,
    code: 'bad_request',
    message: /must carry a Host header/,
  },
  {
    name: 'Host after 2,000 header lines',
    raw: `GET /health HTTP/1.1\r\n${'a: b\r\n'.repeat(2000)}Host: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    status: 431,
    code: 'headers_too_large',
    message: /2000 or more header lines/,
  },
  {
    name: 'OPTIONS *',
    raw: 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    status: 400,
    code: 'bad_request',
    message: /./,
  },
  {
    name: 'a backslash in the target',
    raw: 'GET /v1\\escrows HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    status: 400,
    code: 'bad_request',
    message: /./,
  },
  {
    name: 'an absolute-form target of another scheme',
    raw: 'GET ftp://x/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    status: 0,
    code: '',
    message: /./,
  },
  ...MALFORMED,
];

export const EDGE_TRIED = { cases: 0 };

function assertEdgeAnswer(c: (typeof EDGE_CASES)[number], a: Awaited<ReturnType<typeof rawExchange>>): void {
  if (c.status !== 0) assert.equal(a.status, c.status, `${c.name}: ${a.status} ${a.body}`);
  assert.ok(a.status >= 400 || a.status === 200 || a.status === 204, `${c.name}: ${a.status}`);
  assert.match(a.headers['x-request-id'] ?? '', /^[\x21-\x7e]{1,200}$/, `${c.name}: x-request-id`);
  assert.equal(a.headers['x-content-type-options'], 'nosniff', `${c.name}: nosniff`);
  if (a.status >= 400) {
    assert.match(a.headers['content-type'] ?? '', /^application\/json/, c.name);
    const body = JSON.parse(a.body);
    assert.deepEqual(Object.keys(body.error), ['code', 'message', 'docsUrl'], c.name);
    if (c.code) assert.equal(body.error.code, c.code, c.name);
    assert.match(body.error.message, c.message, c.name);
  }
}

/** A POST whose body never finishes: the request stays open in the service until the socket goes. */
function openRequest(url: string, localAddress?: string): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ port: Number(u.port), host: u.hostname, ...(localAddress ? { localAddress } : {}) }, () => {
      s.write('POST /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"la');
      setTimeout(() => resolve(s), 150);
    });
    s.on('error', reject);
  });
}

function get(url: string, path: string, localAddress?: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ port: Number(u.port), host: u.hostname, ...(localAddress ? { localAddress } : {}) }, () =>
      s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
    );
    const chunks: Buffer[] = [];
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
      if (!m) return reject(new Error(`no answer: ${text.slice(0, 100)}`));
      const headers: Record<string, string> = {};
      for (const line of m[2].split('\r\n'))
        headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      resolve({ status: Number(m[1]), headers, body: m[3] });
    });
  });
}

test('every answer the Node edge gives itself carries the envelope, x-request-id and nosniff', { timeout: 90_000 }, async () => {
  let proc: Proc | undefined;
  try {
    proc = await startService(TSX, { DATA_DIR: ':memory:' });
    for (const c of EDGE_CASES) {
      assertEdgeAnswer(c, await rawExchange(proc.url, c.raw));
      EDGE_TRIED.cases++;
    }
    // HTTP/1.0 needs no Host: still served.
    const old = await rawExchange(proc.url, 'GET /health HTTP/1.0\r\n\r\n');
    assert.equal(old.status, 200, old.body);
    assert.equal(old.headers['x-content-type-options'], 'nosniff');
    assert.equal(await proc.stop(), 0);
    assert.doesNotMatch(proc.stderr(), /"msg":"(request failed|adapter error)"/);
  } finally {
    if (proc && proc.child.exitCode === null) proc.child.kill('SIGKILL');
  }
});

test('a client with CLIENT_MAX_CONCURRENCY requests open gets 429 for the next at once; other clients are served; the place comes back', {
  timeout: 90_000,
}, async () => {
  let proc: Proc | undefined;
  const held: Socket[] = [];
  try {
    proc = await startService(TSX, { DATA_DIR: ':memory:', CLIENT_MAX_CONCURRENCY: '2' });
    held.push(await openRequest(proc.url), await openRequest(proc.url));
    const refused = await get(proc.url, '/health');
    assert.equal(refused.status, 429, refused.body);
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(refused.headers['x-content-type-options'], 'nosniff');
    assert.match(refused.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    const e = JSON.parse(refused.body).error;
    assert.equal(e.code, 'rate_limited');
    assert.match(e.message, /already has 2 requests open.*CLIENT_MAX_CONCURRENCY/);
    // Another client address (127.0.0.2 reaches the loopback listener too) is not held back.
    assert.equal((await get(proc.url, '/health', '127.0.0.2')).status, 200);
    for (const s of held.splice(0)) s.destroy();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await get(proc.url, '/health')).status, 200);
    assert.equal(await proc.stop(), 0);
  } finally {
    for (const s of held) s.destroy();
    if (proc && proc.child.exitCode === null) proc.child.kill('SIGKILL');
  }
});
