// Node adapter benchmark: which IncomingMessage → Request → ServerResponse bridge to serve app.fetch with.
//
//   npx tsx bench/adapter.ts
//   (env: BENCH_SECONDS=5 BENCH_WARMUP_SECONDS=1 BENCH_ROUNDS=3 BENCH_CONNECTIONS=32 BENCH_VARIANTS=naive,current,hono;
//   BENCH_VARIANTS=current,current-direct is the A/B of HTTP_BODY)
//
// One run measures every variant. Each variant serves the real app (PGlite in memory, migrated, keys
// ensured) from a child process of its own, one at a time, so that one adapter's global side effects
// (@hono/node-server replaces global Request/Response) and JIT state cannot leak into another's numbers.
// The load comes from another process on loopback: wrk when it is installed (apt-get install wrk),
// otherwise a small keep-alive node client. Variants:
//   naive           the original adapter (Headers + new Request + Readable.toWeb; arrayBuffer()), kept here as the baseline
//   current         src/node/adapter.ts nodeListener, as main.ts serves it (HTTP_BODY=stream, the default)
//   current-direct  the same with HTTP_BODY=direct: POST bodies read from the message without a web stream
//   hono            @hono/node-server getRequestListener(fetch) with its default (lightweight global Request/Response)
//   hono-noglobals  the same with overrideGlobalObjects: false
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest, Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from '../src/app.ts';

const SELF = fileURLToPath(import.meta.url);
const ALL_VARIANTS = ['naive', 'current', 'current-direct', 'hono', 'hono-noglobals'] as const;
type Variant = (typeof ALL_VARIANTS)[number];

interface Route {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  expect: number;
}

const ROUTES: Route[] = [
  { name: 'GET /health (db)', method: 'GET', path: '/health', expect: 200 },
  { name: 'GET /v1/nope (404, no db)', method: 'GET', path: '/v1/nope', expect: 404 },
  { name: 'POST /v1/agents (201, db)', method: 'POST', path: '/v1/agents', body: '{"label":"bench"}', expect: 201 },
  { name: 'POST /v1/agents (400, body only)', method: 'POST', path: '/v1/agents', body: '{"label":5}', expect: 400 },
];

// ---------------------------------------------------------------------------------------------
// Server side (child process): `tsx bench/adapter.ts --serve <variant>`

/** The original adapter, verbatim in behaviour: the baseline every change is measured against. */
function naiveListener(app: App, opts: { trustProxy: boolean; onError?: (err: unknown) => void }) {
  const clientIp = (req: IncomingMessage) => {
    if (opts.trustProxy) {
      const xff = req.headers['x-forwarded-for'];
      const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
      if (first) return first;
    }
    return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, '');
  };
  return async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const host = req.headers.host ?? 'localhost';
      const url = `http://${/^[\w.:[\]-]+$/.test(host) ? host : 'localhost'}${req.url ?? '/'}`;
      const headers = new Headers();
      const raw = req.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        try {
          headers.append(raw[i], raw[i + 1]);
        } catch {}
      }
      const method = req.method ?? 'GET';
      const hasBody = method !== 'GET' && method !== 'HEAD';
      const request = new Request(url, {
        method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : undefined,
        // @ts-expect-error: duplex is required by Node's fetch for streamed request bodies.
        duplex: hasBody ? 'half' : undefined,
      });
      const response = await app.fetch(request, { ip: clientIp(req) });
      const outHeaders: Record<string, string | string[]> = {};
      response.headers.forEach((v, k) => {
        outHeaders[k] = v;
      });
      const body = response.body ? new Uint8Array(await response.arrayBuffer()) : undefined;
      if (body) outHeaders['content-length'] = String(body.byteLength);
      res.writeHead(response.status, outHeaders);
      res.end(body);
      if (hasBody && !req.readableEnded) req.destroy();
    } catch (err) {
      opts.onError?.(err);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ error: { code: 'internal', message: 'Internal error.', docsUrl: '/docs/errors#internal' } }));
      } else res.destroy();
    }
  };
}

/** @hono/node-server's request listener wrapping app.fetch, the client IP taken from env.incoming. */
async function honoListener(app: App, overrideGlobalObjects: boolean) {
  const { getRequestListener } = await import('@hono/node-server');
  return getRequestListener(
    (request, env) => {
      const incoming = env.incoming as IncomingMessage;
      return app.fetch(request, { ip: (incoming.socket.remoteAddress ?? 'unknown').replace(/^::ffff:/, '') });
    },
    { overrideGlobalObjects },
  );
}

async function serve(variant: Variant) {
  const { parseConfig } = await import('../src/config.ts');
  const { openPglite } = await import('../src/db/pglite.ts');
  const { migrate } = await import('../src/db/migrate.ts');
  const { ensureKeys } = await import('../src/proof/keyEras.ts');
  const { memoryKey } = await import('../src/proof/keys.ts');
  // For hono the global Request/Response must be replaced before the app makes any of them.
  let listener: (req: IncomingMessage, res: ServerResponse) => unknown;
  let appRef: App | undefined;
  const lazyApp = {
    fetch: (r: Request, i?: { ip?: string }) => appRef!.fetch(r, i),
  } as App;
  if (variant === 'naive') listener = naiveListener(lazyApp, { trustProxy: false });
  else if (variant === 'current' || variant === 'current-direct') {
    const { nodeListener } = await import('../src/node/adapter.ts');
    listener = nodeListener(lazyApp, { trustProxy: false, body: variant === 'current-direct' ? 'direct' : 'stream' });
  } else listener = (await honoListener(lazyApp, variant === 'hono')) as typeof listener;

  const { createApp } = await import('../src/app.ts');
  const config = parseConfig({ DATA_DIR: ':memory:' });
  const db = await openPglite(':memory:');
  await migrate(db);
  await ensureKeys(db, { issuer: memoryKey(), webhook: memoryKey() });
  appRef = createApp({ db, config, onError: (err) => process.stderr.write(`app error: ${String(err)}\n`) });

  const server = createServer(listener as Parameters<typeof createServer>[1]);
  server.keepAliveTimeout = 5_000;
  server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 }) + '\n');
  });
  process.on('SIGTERM', () => {
    server.close(() => void db.close().then(() => process.exit(0)));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 2000).unref();
  });
}

// ---------------------------------------------------------------------------------------------
// Load generator (fallback when wrk is absent): `tsx bench/adapter.ts --load <json>` prints a result line.

interface LoadResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
  wrongStatus: number;
}

async function load(spec: { port: number; route: Route; seconds: number; connections: number }): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: spec.connections });
  const latencies: number[] = [];
  let errors = 0;
  let wrongStatus = 0;
  const end = performance.now() + spec.seconds * 1000;
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: spec.port,
          method: spec.route.method,
          path: spec.route.path,
          agent,
          headers: spec.route.body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(spec.route.body) } : {},
        },
        (res) => {
          if (res.statusCode !== spec.route.expect) wrongStatus++;
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - t0);
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(spec.route.body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: spec.connections }, async () => {
      while (performance.now() < end) await one();
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
  return { rps: latencies.length / elapsed, p50ms: pct(50), p99ms: pct(99), errors, wrongStatus };
}

// ---------------------------------------------------------------------------------------------
// Orchestrator

function hasWrk(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}

function toMs(v: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

function runWrk(port: number, route: Route, seconds: number, connections: number, dir: string): Promise<LoadResult> {
  const script = join(dir, `route-${ROUTES.indexOf(route)}.lua`);
  const lua = [`wrk.method = ${JSON.stringify(route.method)}`];
  if (route.body) {
    lua.push(`wrk.body = ${JSON.stringify(route.body)}`, `wrk.headers["Content-Type"] = "application/json"`);
  }
  writeFileSync(script, lua.join('\n') + '\n');
  const threads = Math.min(2, connections);
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', [
      '-t',
      String(threads),
      '-c',
      String(connections),
      '-d',
      `${seconds}s`,
      '--latency',
      '-s',
      script,
      `http://127.0.0.1:${port}${route.path}`,
    ]);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', () => {
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
      const p50 = /^\s+50%\s+(\S+)/m.exec(out)?.[1];
      const p99 = /^\s+99%\s+(\S+)/m.exec(out)?.[1];
      const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const errors = sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
      const wrongStatus = route.expect < 300 ? non2xx : total - non2xx;
      if (!Number.isFinite(rps)) return reject(new Error(`could not read wrk output:\n${out}`));
      resolve({ rps, p50ms: toMs(p50 ?? ''), p99ms: toMs(p99 ?? ''), errors, wrongStatus });
    });
  });
}

function runNodeLoad(port: number, route: Route, seconds: number, connections: number): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--load', JSON.stringify({ port, route, seconds, connections })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load generator exited ${code}`))));
  });
}

async function startServer(variant: Variant): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--serve', variant], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`${variant} server exited ${code} before listening`)));
  });
  return { child, port };
}

/** One plain request: the variant must answer each route with the status the app gives. */
function probe(port: number, route: Route): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: route.method,
        path: route.path,
        headers: route.body ? { 'content-type': 'application/json' } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(route.body);
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function orchestrate() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
  const warmup = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const variants = (process.env.BENCH_VARIANTS?.split(',') ?? ['naive', 'current', 'hono']) as Variant[];
  for (const v of variants) if (!ALL_VARIANTS.includes(v)) throw new Error(`unknown variant ${v}; one of ${ALL_VARIANTS.join(', ')}`);
  const wrk = hasWrk();
  const tool = wrk ? 'wrk' : 'a node keep-alive client (install wrk for steadier numbers: apt-get install -y wrk)';
  console.log(
    `adapter bench: ${rounds} round(s) x ${variants.length} adapters x ${ROUTES.length} routes; ${seconds}s each after ${warmup}s warm-up; ` +
      `${connections} connections from ${tool}; node ${process.version}, ${availableParallelism()} CPUs, load average ${loadavg()[0].toFixed(2)}`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'adapter-bench-'));
  const results = new Map<string, LoadResult[]>();
  try {
    // Rounds interleave the adapters, so that a busy neighbour on the machine slows all of them
    // alike; the table reports the median of the rounds.
    for (let round = 1; round <= rounds; round++) {
      for (const variant of variants) {
        const { child, port } = await startServer(variant);
        try {
          for (const route of ROUTES) {
            const status = await probe(port, route);
            if (status !== route.expect) throw new Error(`${variant}: ${route.name} answered ${status}, expected ${route.expect}`);
            const measure = (s: number) => (wrk ? runWrk(port, route, s, connections, dir) : runNodeLoad(port, route, s, connections));
            if (warmup > 0) await measure(warmup);
            const r = await measure(seconds);
            const key = `${variant}\t${route.name}`;
            results.set(key, [...(results.get(key) ?? []), r]);
            console.log(
              `  round ${round} ${variant.padEnd(15)} ${route.name.padEnd(34)} ${r.rps.toFixed(0).padStart(7)} rps  p50 ${r.p50ms.toFixed(2)} ms  p99 ${r.p99ms.toFixed(2)} ms`,
            );
          }
        } finally {
          child.kill('SIGTERM');
          await new Promise((r) => child.once('exit', r));
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nmedian of ${rounds} round(s); load average now ${loadavg()[0].toFixed(2)}\n`);
  console.log('| route | adapter | rps | vs naive | p50 ms | p99 ms | errors | wrong status |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const route of ROUTES) {
    const base = results.get(`naive\t${route.name}`);
    for (const variant of variants) {
      const rs = results.get(`${variant}\t${route.name}`) ?? [];
      const rps = median(rs.map((r) => r.rps));
      const vs = base ? `${((rps / median(base.map((r) => r.rps))) * 100).toFixed(0)}%` : '';
      const sum = (f: (r: LoadResult) => number) => rs.reduce((a, r) => a + f(r), 0);
      console.log(
        `| ${route.name} | ${variant} | ${rps.toFixed(0)} | ${vs} | ${median(rs.map((r) => r.p50ms)).toFixed(2)} | ${median(rs.map((r) => r.p99ms)).toFixed(2)} | ${sum((r) => r.errors)} | ${sum((r) => r.wrongStatus)} |`,
      );
    }
  }
}

const mode = process.argv[2];
if (mode === '--serve') await serve(process.argv[3] as Variant);
else if (mode === '--load') process.stdout.write(JSON.stringify(await load(JSON.parse(process.argv[3]))) + '\n');
else await orchestrate();
