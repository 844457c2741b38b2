// Run 5: webhook events delivered to one loopback receiver (node:http in this process) while
// `concurrency` escrows run their lifecycles against the service (the child process of runs 1 and 2,
// whose earlier escrows emitted nothing: no URL was registered then), and the end-to-end
// latency from commit (the moment the command's HTTP answer came back) to receipt. Floor: the same
// bodies POSTed straight to the receiver, one at a time (per-URL order allows one in flight).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { client, dist, expectStatus, log, nowMs, runFor, sleep, type Child, type Dist } from './lib.ts';
import { httpLifecycle, makeAgents, type Step } from './lifecycle.ts';

export interface WebhookRun {
  concurrency: number;
  produceSeconds: number;
  lifecycles: number;
  produced: number;
  delivered: number;
  duplicates: number;
  /** Events produced per second while the escrows ran. */
  producedPerSecond: number;
  /** Delivered events / (last receipt − first commit). */
  deliveredPerSecond: number;
  /** Receipt − the command's answer (commit) per event, ms. */
  e2e: Dist;
  /** Receipt − the event's `at` (database clock at the command's start), ms. */
  e2eFromAt: Dist;
  drainMs: number;
  /** Delivered events/s after the escrows stopped (the sender alone, draining its backlog). */
  drainPerSecond: number;
  /** Service CPU while draining (the sender alone): per delivered event, and share of one core. */
  drainCpu: { msPerEvent: number; coreShare: number };
  /** Time between consecutive receipts (one URL: one send at a time), ms. */
  gap: Dist;
  floor: { posts: number; perSecond: number; bodyBytes: number };
}

const STEP_OF: Record<string, Step> = {
  'escrow.created': 'create',
  'escrow.funded': 'fund',
  'delivery.submitted': 'deliver',
  'verdict.passed': 'deliver',
  'proof.issued': 'deliver',
};

export async function webhookBench(child: Child, seconds: number, concurrency: number, drainSeconds: number): Promise<WebhookRun> {
  const got = new Map<string, { t: number; event: string; escrowId: string; at: string }>();
  const bodies: string[] = [];
  let duplicates = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const t = nowMs();
      if (req.url === '/hook') {
        const body = Buffer.concat(chunks).toString('utf8');
        const id = String(req.headers['webhook-id']);
        if (got.has(id)) duplicates++;
        else {
          const e = JSON.parse(body);
          got.set(id, { t, event: e.event, escrowId: e.escrowId, at: e.at });
          if (bodies.length < 1000) bodies.push(body);
        }
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const setup = client(child.url, 1);
    expectStatus(await setup.req('POST', '/v1/webhooks', { url: `${receiver}/hook` }), 201, 'POST /v1/webhooks');
    const agents = await makeAgents(setup);
    setup.close();

    const committed = new Map<string, number>();
    let produced = 0;
    let lifecycles = 0;
    const c = client(child.url, concurrency);
    const start = nowMs();
    const elapsed = await runFor(concurrency, seconds, async (_w, until) => {
      while (performance.now() < until) {
        await httpLifecycle(c, agents, () => {}, (escrowId, step, at) => {
          committed.set(`${escrowId}:${step}`, at);
          produced += step === 'deliver' ? 3 : 1;
        });
        lifecycles++;
      }
    });
    c.close();
    const producedAt = nowMs();
    const cpu0 = child.cpuMs();
    const deadline = producedAt + drainSeconds * 1000;
    while (got.size < produced && nowMs() < deadline) await sleep(20);
    const drainCpuMs = child.cpuMs() - cpu0;
    const drainWallMs = nowMs() - producedAt;
    if (got.size < produced) log(`webhooks: ${produced - got.size} of ${produced} events still undelivered after ${drainSeconds} s`);
    const receipts = [...got.values()].sort((a, b) => a.t - b.t);
    const last = receipts.length ? receipts[receipts.length - 1].t : NaN;
    const gaps = receipts.slice(1).map((r, i) => r.t - receipts[i].t);
    const drained = receipts.filter((r) => r.t > producedAt).length;
    const e2e: number[] = [];
    const fromAt: number[] = [];
    for (const r of receipts) {
      const at = committed.get(`${r.escrowId}:${STEP_OF[r.event]}`);
      // A receipt can beat the client's view of the answer by a hair: the row is committed first.
      if (at !== undefined) e2e.push(Math.max(0, r.t - at));
      fromAt.push(r.t - Date.parse(r.at));
    }

    // Floor: the same bodies to the same receiver, serially, over one keep-alive connection.
    const f = client(receiver, 1);
    const sample = bodies.length ? bodies : ['{}'];
    for (let i = 0; i < 50; i++) await f.req('POST', '/floor', sample[i % sample.length]);
    let posts = 0;
    const floorMs = await runFor(1, Math.min(2, seconds), async (_w, until) => {
      while (performance.now() < until) {
        expectStatus(await f.req('POST', '/floor', sample[posts % sample.length]), 200, 'floor POST');
        posts++;
      }
    });
    f.close();
    return {
      concurrency,
      produceSeconds: elapsed / 1000,
      lifecycles,
      produced,
      delivered: got.size,
      duplicates,
      producedPerSecond: (produced * 1000) / elapsed,
      deliveredPerSecond: (got.size * 1000) / (last - start),
      e2e: dist(e2e),
      e2eFromAt: dist(fromAt),
      drainMs: last - producedAt,
      drainPerSecond: last > producedAt ? (drained * 1000) / (last - producedAt) : NaN,
      drainCpu: { msPerEvent: drainCpuMs / (drained || 1), coreShare: drainCpuMs / Math.max(1, drainWallMs) },
      gap: dist(gaps),
      floor: { posts, perSecond: (posts * 1000) / floorMs, bodyBytes: Math.round(sample.reduce((a, b) => a + b.length, 0) / sample.length) },
    };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
