// Run 5: webhook events delivered to one loopback receiver (node:http in this process) from the
// service child process of runs 1 and 2 (whose earlier escrows emitted nothing: no URL was registered
// then). Two phases:
//  1. live: `concurrency` escrows run their lifecycles while the receiver answers at once; the
//     end-to-end latency is commit (the command's HTTP answer came back) → receipt. Target p99 < 1 s.
//  2. backlog: the receiver holds every request (answers nothing) while the escrows run again, so
//     the outbox fills behind the WEBHOOK_CONCURRENCY requests it holds; then it answers, and the
//     drain rate is the backlog delivered / (last receipt − release). Target ≥ 500 events/s.
// Floor: the same bodies POSTed straight to the receiver, WEBHOOK_CONCURRENCY (the default) at a time.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { benchConfig, client, dist, expectStatus, log, nowMs, runFor, sleep, type Child, type Dist } from './lib.ts';
import { httpLifecycle, makeAgents, type Step } from './lifecycle.ts';

/** The service's defaults, as the service child process runs with them. */
const DEFAULTS = benchConfig();
/** WEBHOOK_CONCURRENCY: requests in flight per URL. */
const PER_URL = DEFAULTS.webhookConcurrency;
/** The backlog phase holds requests at most this long: half of WEBHOOK_TIMEOUT_MS, so none times out. */
const MAX_HOLD_SECONDS = DEFAULTS.webhookTimeoutMs / 2000;

export interface WebhookRun {
  concurrency: number;
  produceSeconds: number;
  lifecycles: number;
  produced: number;
  delivered: number;
  duplicates: number;
  /** Events produced per second while the escrows ran (live phase). */
  producedPerSecond: number;
  /** Live phase: delivered events / (last receipt − first commit). */
  deliveredPerSecond: number;
  /** Live phase: receipt − the command's answer (commit) per event, ms. */
  e2e: Dist;
  /** Live phase: receipt − the event's `at` (database clock at the command's start), ms. */
  e2eFromAt: Dist;
  /** Live phase: last receipt − the moment production stopped (what was still queued), ms. */
  drainMs: number;
  /** Backlog phase: events delivered per second after the receiver started answering. */
  drainPerSecond: number;
  /** Backlog phase: events queued when the receiver started answering, and how long they took, ms. */
  backlog: { events: number; ms: number; heldAtOnce: number };
  /** Service CPU while draining the backlog (the sender alone): per delivered event, and share of one core. */
  drainCpu: { msPerEvent: number; coreShare: number };
  /** Live phase: time between consecutive receipts, ms. */
  gap: Dist;
  floor: { posts: number; perSecond: number; bodyBytes: number; inFlight: number };
}

const STEP_OF: Record<string, Step> = {
  'escrow.created': 'create',
  'escrow.funded': 'fund',
  'delivery.submitted': 'deliver',
  'verdict.passed': 'deliver',
  'proof.issued': 'deliver',
};

interface Receipt {
  t: number;
  event: string;
  escrowId: string;
  at: string;
}

export async function webhookBench(child: Child, seconds: number, concurrency: number, drainSeconds: number): Promise<WebhookRun> {
  const got = new Map<string, Receipt>();
  const bodies: string[] = [];
  let duplicates = 0;
  let holding = false;
  let open = 0;
  let heldAtOnce = 0;
  const held: Array<() => void> = [];
  const server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = () => {
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
      };
      if (holding && req.url === '/hook') {
        heldAtOnce = Math.max(heldAtOnce, ++open);
        held.push(() => {
          open--;
          answer();
        });
      } else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const waitAll = async (n: number, from: number) => {
    const deadline = from + drainSeconds * 1000;
    while (got.size < n && nowMs() < deadline) await sleep(10);
    if (got.size < n) log(`webhooks: ${n - got.size} of ${n} events still undelivered after ${drainSeconds} s`);
  };
  try {
    const setup = client(child.url, 1);
    expectStatus(await setup.req('POST', '/v1/webhooks', { url: `${receiver}/hook` }), 201, 'POST /v1/webhooks');
    const agents = await makeAgents(setup);
    setup.close();

    const committed = new Map<string, number>();
    let produced = 0;
    let lifecycles = 0;
    const c = client(child.url, concurrency);
    const produce = (secs: number, record: boolean) =>
      runFor(concurrency, secs, async (_w, until) => {
        while (performance.now() < until) {
          await httpLifecycle(
            c,
            agents,
            () => {},
            (escrowId, step, at) => {
              if (record) committed.set(`${escrowId}:${step}`, at);
              produced += step === 'deliver' ? 3 : 1;
            },
          );
          if (record) lifecycles++;
        }
      });

    // Phase 1: live.
    const start = nowMs();
    const elapsed = await produce(seconds, true);
    const producedLive = produced;
    const producedAt = nowMs();
    await waitAll(producedLive, producedAt);
    const live = [...got.values()].sort((a, b) => a.t - b.t);
    const last = live.length ? live[live.length - 1].t : NaN;
    const gaps = live.slice(1).map((r, i) => r.t - live[i].t);
    const e2e: number[] = [];
    const fromAt: number[] = [];
    for (const r of live) {
      const at = committed.get(`${r.escrowId}:${STEP_OF[r.event]}`);
      // A receipt can beat the client's view of the answer by a hair: the row is committed first.
      if (at !== undefined) e2e.push(Math.max(0, r.t - at));
      fromAt.push(r.t - Date.parse(r.at));
    }
    const deliveredLive = got.size;

    // Phase 2: backlog. The receiver holds what it gets while the escrows run, then answers everything.
    holding = true;
    await produce(Math.min(seconds, MAX_HOLD_SECONDS), false);
    c.close();
    const backlogEvents = produced - got.size;
    holding = false;
    const cpu0 = child.cpuMs();
    const released = nowMs();
    for (const answer of held.splice(0)) answer();
    await waitAll(produced, released);
    const drainWallMs = nowMs() - released;
    const drainCpuMs = child.cpuMs() - cpu0;
    const drainedAll = [...got.values()].filter((r) => r.t >= released);
    const lastDrained = Math.max(...drainedAll.map((r) => r.t));
    const drainMsBacklog = lastDrained - released;

    // Floor: the same bodies to the same receiver, PER_URL at a time over keep-alive connections.
    const f = client(receiver, PER_URL);
    const sample = bodies.length ? bodies : ['{}'];
    for (let i = 0; i < 50; i++) await f.req('POST', '/floor', sample[i % sample.length]);
    let posts = 0;
    const floorMs = await runFor(PER_URL, Math.min(2, seconds), async (_w, until) => {
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
      producedPerSecond: (producedLive * 1000) / elapsed,
      deliveredPerSecond: (deliveredLive * 1000) / (last - start),
      e2e: dist(e2e),
      e2eFromAt: dist(fromAt),
      drainMs: last - producedAt,
      drainPerSecond: drainMsBacklog > 0 ? (drainedAll.length * 1000) / drainMsBacklog : NaN,
      backlog: { events: backlogEvents, ms: drainMsBacklog, heldAtOnce },
      drainCpu: { msPerEvent: drainCpuMs / (drainedAll.length || 1), coreShare: drainCpuMs / Math.max(1, drainWallMs) },
      gap: dist(gaps),
      floor: {
        posts,
        perSecond: (posts * 1000) / floorMs,
        bodyBytes: Math.round(sample.reduce((a, b) => a + b.length, 0) / sample.length),
        inFlight: PER_URL,
      },
    };
  } finally {
    for (const answer of held.splice(0)) answer();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
