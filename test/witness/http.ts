// A test witness (test/witness/witness.ts) served over HTTP on loopback: a started service reaches it
// as it would a real one. A request whose connection closes (the service gave up on it) aborts the
// witness's handling, so a hanging ('silent') witness leaves nothing pending behind.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestWitness } from './witness.ts';

export async function serveWitness(w: TestWitness): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const answer = await w.fetch(
          new Request(`http://127.0.0.1${req.url}`, {
            method: req.method,
            body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
            signal: gone.signal,
          }),
        );
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
        res.end(Buffer.from(await answer.arrayBuffer()));
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
