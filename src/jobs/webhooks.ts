// The webhook sender: runs on every instance, claims runs of due outbox rows per URL, keeps up to
// WEBHOOK_CONCURRENCY requests in flight per URL, retries with backoff and dead-letters (docs/protocol.md
// §14.3; docs/design.md §5). The lanes and the statements live in src/webhooks/sender.ts and outbox.ts.
import type { Services } from '../services.ts';
import { SenderEngine, type Outcome } from '../webhooks/sender.ts';

export { LEASE_MARGIN_MS } from '../webhooks/sender.ts';
export type { Outcome };

/** Idle poll: how long a new event may wait for an idle sender to look (the sender is woken by its own results). */
const DEFAULT_POLL_MS = 100;
/** Busy ticks are at least this far apart, so a burst of results is written by one statement. */
const MIN_TICK_GAP_MS = 10;

export interface SendResult {
  claimed: number;
  delivered: number;
  retried: number;
  deadLettered: number;
  errors: number;
}

function tally(result: SendResult) {
  return (o: Outcome) => {
    if (o === 'delivered') result.delivered++;
    else if (o === 'retry') result.retried++;
    else if (o === 'dead') result.deadLettered++;
    else result.errors++;
  };
}

/**
 * One pass: claim up to `concurrency` (default WEBHOOK_CONCURRENCY) due rows per URL that no other
 * sender holds, send them all at once, wait for every answer and write the results. Tests drive the
 * sender with this; the running service uses startWebhookSender.
 */
export async function sendDueOnce(
  svc: Services,
  opts: { limit?: number; concurrency?: number; onError?: (err: unknown) => void } = {},
): Promise<SendResult> {
  const result: SendResult = { claimed: 0, delivered: 0, retried: 0, deadLettered: 0, errors: 0 };
  const engine = new SenderEngine(svc, {
    perUrl: opts.concurrency ?? svc.config.webhookConcurrency,
    prefetch: false,
    onOutcome: tally(result),
    onError: (_what, err) => opts.onError?.(err),
  });
  result.claimed = await engine.tick(true, opts.limit ?? 1000);
  engine.pump();
  await engine.settle();
  await engine.tick(false);
  return result;
}

type Log = (msg: string, fields?: Record<string, unknown>) => void;

export interface Sender {
  stop(): Promise<void>;
}

/**
 * The running sender. Each tick (one transaction) writes the results gathered since the last one and
 * claims more rows; a lane starts a queued row the moment one of its requests finishes, so a good
 * receiver is never waiting on the database, and a slow or dead one only fills its own lane (at most
 * `concurrency` requests, each bounded by WEBHOOK_TIMEOUT_MS). Ticks run every `pollMs`, and sooner
 * (at most one per MIN_TICK_GAP_MS) when a finished request leaves a lane running low. Stopping hands queued rows back, waits
 * for the requests in flight and writes their results, so nothing is left to its lease.
 */
export function startWebhookSender(svc: Services, opts: { log: Log; concurrency?: number; pollMs?: number }): Sender {
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  const engine = new SenderEngine(svc, {
    perUrl: opts.concurrency ?? svc.config.webhookConcurrency,
    prefetch: true,
    onError: (what, err, url) => opts.log(what, { url, error: String(err) }),
  });
  let stopped = false;
  let poked = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    poked = true;
    wake?.();
  };
  engine.onSettled = poke;
  const nap = (ms: number, wakeable: boolean) =>
    new Promise<void>((resolve) => {
      if (wakeable && poked) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      if (wakeable) wake = done;
    });
  const loop = (async () => {
    while (!stopped) {
      poked = false;
      const started = Date.now();
      let tickMs = 0;
      try {
        await engine.tick(true);
        tickMs = Date.now() - started;
        engine.pump();
      } catch (err) {
        if (!stopped) opts.log('webhook claim failed', { error: String(err) });
      }
      // Until the poll is due, a finished request wakes the loop, but it ticks again only when a
      // lane is running low (a deep queue needs no database round trip yet).
      for (;;) {
        const left = pollMs - (Date.now() - started);
        if (stopped || left <= 0) break;
        await nap(left, true);
        if (poked) {
          poked = false;
          if (engine.wantsTick()) break;
        }
      }
      // Always a turn of the event loop between ticks. On PGlite (one connection, run in this
      // thread) the store is also left idle at least as long as the tick took: a statement's promise
      // settles without the event loop turning, so back-to-back ticks would starve every request.
      // Postgres runs elsewhere, and idling after a slow tick (a dead key's timeouts written at
      // once) only made the next claim, and a healthy key's events, wait (docs/security.md
      // "Webhook fairness").
      const sinceStart = Date.now() - started;
      const storeRoom = svc.db.kind === 'pglite' ? tickMs - (sinceStart - tickMs) : 0;
      // Never below 0: both terms are negative once a poll has waited its interval, and a negative
      // delay made Deno print a TimeoutNegativeWarning at every start (the timer ran at once anyway).
      const gap = Math.max(0, MIN_TICK_GAP_MS - sinceStart, storeRoom);
      if (!stopped) await nap(gap, false);
    }
  })();
  return {
    async stop() {
      stopped = true;
      poke();
      await loop;
      engine.releaseQueued();
      await engine.settle();
      await engine.tick(false).catch((err) => opts.log('webhook results could not be written at stop', { error: String(err) }));
    },
  };
}
