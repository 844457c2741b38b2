// Background work that runs on every instance: the deadline sweep, the log integrator's periodic
// tick, and the webhook sender.
import type { Services } from '../services.ts';
import { startTicker, type Ticker } from './ticker.ts';
import { SWEEP_BATCH, sweepOnce } from './sweep.ts';
import { pruneIdempotency } from '../db/idempotency.ts';
import { startWebhookSender } from './webhooks.ts';
import { submitOnce } from '../witness/submitter.ts';
import { anchorChecks } from '../witness/check.ts';

export interface Jobs {
  stop(): Promise<void>;
}

type Log = (msg: string, fields?: Record<string, unknown>) => void;

/** How often the integrator looks for leaves nobody waits for (an instance died between commit and integration). */
export const LOG_TICK_MS = 1000;

export function startJobs(svc: Services, opts: { log: Log }): Jobs {
  const tickers: Ticker[] = [];
  const stopping = new AbortController();
  if (svc.config.witnesses.length > 0) {
    // The log's anchor (docs/operations.md §3): before anything is appended, the witnesses confirm
    // the database's newest checkpoint; from then on, it watches for another server and for a
    // database behind them. Asked at once, then every interval.
    const checks = anchorChecks(svc, { log: opts.log, intervalMs: svc.config.witnessIntervalMs, signal: stopping.signal });
    const checkFailed = (err: unknown) => opts.log('witness check failed', { error: String(err) });
    void checks.tick().catch(checkFailed);
    tickers.push(startTicker(svc.config.witnessIntervalMs, () => checks.tick(), checkFailed));
  }
  svc.proofLog.onError = (err) => opts.log('log integration failed', { error: String((err as Error)?.stack ?? err) });
  // At start: what a crash left pending is integrated before anything else waits on it.
  void svc.proofLog.drain();
  tickers.push(
    startTicker(
      LOG_TICK_MS,
      () => svc.proofLog.drain(),
      (err) => opts.log('log integration failed', { error: String(err) }),
    ),
  );
  tickers.push(
    startTicker(
      svc.config.sweepIntervalMs,
      async () => {
        // Drain: keep sweeping full batches until a pass finds less than a batch to do.
        for (let i = 0; i < 1000; i++) {
          const r = await sweepOnce(svc, {
            onError: (id, err) => opts.log('sweep could not close an escrow', { escrowId: id, error: String(err) }),
          });
          if (!r.ran || r.closed + r.failed + r.errors < SWEEP_BATCH) break;
          // Between passes, let users' requests have the event loop and the pool.
          await new Promise<void>((resolve) => setTimeout(resolve, 0));
        }
        // Expired Idempotency-Key records (24 h retention, docs/protocol.md §9.1): a bounded batch per tick.
        await pruneIdempotency(svc.db);
      },
      (err) => opts.log('sweep failed', { error: String(err) }),
    ),
  );
  // The webhook sender: outbox rows claimed with SKIP LOCKED, so every instance can run it.
  tickers.push(startWebhookSender(svc, { log: opts.log }));
  // The witness submitter (docs/witnessing.md): at most one submission per witness per interval;
  // stopping aborts its requests in flight, so a slow witness never delays shutdown.
  if (svc.config.witnesses.length > 0) {
    tickers.push(
      startTicker(
        svc.config.witnessIntervalMs,
        () => submitOnce(svc, { log: opts.log, signal: stopping.signal }),
        (err) => opts.log('witness submission failed', { error: String(err) }),
      ),
    );
  }
  return {
    async stop() {
      stopping.abort();
      await Promise.all(tickers.map((t) => t.stop()));
      await svc.proofLog.stop();
    },
  };
}
