// The Node edge's two ways of reading a request body (src/node/adapter.ts, HTTP_BODY): through a web
// stream (the default) and straight from the message. Each case is sent to a server of each kind over
// real sockets, and the two must answer alike: the same statuses, codes and messages, the same caps.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { makeHarness, type Harness } from '../harness.ts';
import { httpBodyMode, nodeListener } from '../../src/node/adapter.ts';
import { ConfigError } from '../../src/errors.ts';
import { rawExchange } from '../process/rawHttp.ts';

const MODES = ['stream', 'direct'] as const;

/** A POST whose body goes out in pieces: chunked when `length` is null, else under that Content-Length. */
function postInPieces(url: string, path: string, pieces: string[], length: number | null): string {
  const head = [`POST ${path} HTTP/1.1`, `Host: ${new URL(url).host}`, 'Content-Type: application/json', 'Connection: close'];
  if (length === null) {
    head.push('Transfer-Encoding: chunked');
    return `${head.join('\r\n')}\r\n\r\n${pieces.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('')}0\r\n\r\n`;
  }
  head.push(`Content-Length: ${length}`);
  return `${head.join('\r\n')}\r\n\r\n${pieces.join('')}`;
}

const errorOf = (body: string) => {
  try {
    return JSON.parse(body).error as { code: string; message: string } | undefined;
  } catch {
    return undefined;
  }
};

describe('request bodies read through a stream and directly', () => {
  let h: Harness;
  const servers: Record<string, { server: Server; url: string }> = {};
  before(async () => {
    h = await makeHarness('pglite');
    for (const body of MODES) {
      const server = createServer(nodeListener(h.app, { trustProxy: false, body }));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      servers[body] = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    }
  });
  after(async () => {
    for (const { server } of Object.values(servers)) {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
    await h?.close();
  });

  /** Sends `raw` to both servers; their answers (status, error code and message) must agree. */
  async function both(raw: (url: string) => string | Buffer) {
    const out = [];
    for (const mode of MODES) {
      const a = await rawExchange(servers[mode].url, raw(servers[mode].url));
      out.push({ status: a.status, error: errorOf(a.body), body: a.body });
    }
    assert.equal(out[0].status, out[1].status, `stream ${out[0].body} / direct ${out[1].body}`);
    assert.deepEqual(out[0].error, out[1].error);
    return out[1];
  }

  test('a small JSON body, whole or in pieces, declared or chunked: read the same', async () => {
    const body = JSON.stringify({ label: 'in pieces ✓' });
    for (const length of [Buffer.byteLength(body), null]) {
      const a = await both((url) => postInPieces(url, '/v1/agents', [body.slice(0, 5), body.slice(5)], length));
      assert.equal(a.status, 201, a.body);
      assert.equal(JSON.parse(Buffer.from(a.body, 'latin1').toString('utf8')).label, 'in pieces ✓');
    }
  });

  test('malformed JSON, bad UTF-8 and an empty body get the same 400s', async () => {
    const bad = await both((url) => postInPieces(url, '/v1/agents', ['{"label": '], 10));
    assert.equal(bad.status, 400);
    assert.equal(bad.error?.code, 'bad_request');
    const head = (url: string) =>
      `POST /v1/agents HTTP/1.1\r\nHost: ${new URL(url).host}\r\nContent-Type: application/json\r\nContent-Length: 3\r\nConnection: close\r\n\r\n`;
    const utf8 = await both((url) => Buffer.concat([Buffer.from(head(url)), Buffer.from([0x22, 0xff, 0x22])]));
    assert.equal(utf8.status, 400);
    assert.match(utf8.error!.message, /UTF-8/);
    const empty = await both((url) => postInPieces(url, '/v1/escrows/esc_01aaaaaaaaaaaaaaaaaaaaaaaa/fund', [], 0));
    assert.equal(empty.status, 404, empty.body);
  });

  test('the caps hold: a declared length over 1 MB, a chunked body that grows past it, 32 KB on /v1/verify', async () => {
    const declared = await both(
      (url) =>
        `POST /v1/agents HTTP/1.1\r\nHost: ${new URL(url).host}\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024 + 1}\r\nConnection: close\r\n\r\n{`,
    );
    assert.equal(declared.status, 413);
    assert.equal(declared.error?.code, 'payload_too_large');
    const big = JSON.stringify({ label: 'x'.repeat(1024 * 1024) });
    const grown = await both((url) => postInPieces(url, '/v1/agents', [big.slice(0, 600_000), big.slice(600_000)], null));
    assert.equal(grown.status, 413);
    assert.match(grown.error!.message, /1 MB/);
    const verify = await both((url) => postInPieces(url, '/v1/verify', [JSON.stringify({ proof: 'y'.repeat(40_000) })], null));
    assert.equal(verify.status, 413);
    assert.match(verify.error!.message, /32 KB/);
  });

  test('a client that goes away mid-body costs nothing: the next request is served', async () => {
    for (const mode of MODES) {
      const { url } = servers[mode];
      await new Promise<void>((resolve) => {
        const sock = connect(Number(new URL(url).port), '127.0.0.1', () => {
          sock.write(`POST /v1/agents HTTP/1.1\r\nHost: ${new URL(url).host}\r\nContent-Length: 100\r\n\r\n{"label":`);
          setTimeout(() => {
            sock.destroy();
            resolve();
          }, 50);
        });
        sock.on('error', () => {});
      });
      const ok = await rawExchange(url, postInPieces(url, '/v1/agents', ['{"label":"after"}'], 17));
      assert.equal(ok.status, 201, `${mode}: ${ok.body}`);
    }
  });

  test('HTTP_BODY: stream by default, direct on request, anything else refused naming the variable', () => {
    assert.equal(httpBodyMode({}), 'stream');
    assert.equal(httpBodyMode({ HTTP_BODY: '' }), 'stream');
    assert.equal(httpBodyMode({ HTTP_BODY: 'direct' }), 'direct');
    assert.throws(
      () => httpBodyMode({ HTTP_BODY: 'fast' }),
      (e: unknown) => e instanceof ConfigError && /HTTP_BODY/.test(e.message),
    );
  });
});
