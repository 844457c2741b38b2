// Background work that runs on every instance: the deadline sweep and the webhook sender.
import type { Services } from '../services.ts';
import { startTicker, type Ticker } from './ticker.ts';
import { SWEEP_BATCH, sweepOnce } from './sweep.ts';
import { pruneIdempotency } from '../http/idempotency.ts';
import { startWebhookSender } from './webhooks.ts';

export interface Jobs {
  stop(): Promise<void>;
}

type Log = (msg: string, fields?: Record<string, unknown>) => void;

export function startJobs(svc: Services, opts: { log: Log }): Jobs {
  const tickers: Ticker[] = [];
  tickers.push(startTicker(svc.config.sweepIntervalMs, async () => {
    // Drain: keep sweeping full batches until a pass finds less than a batch to do.
    for (let i = 0; i < 1000; i++) {
      const r = await sweepOnce(svc, { onError: (id, err) => opts.log('sweep could not close an escrow', { escrowId: id, error: String(err) }) });
      if (!r.ran || r.closed + r.failed + r.errors < SWEEP_BATCH) break;
    }
    // Expired Idempotency-Key records (24 h retention, CONTRACT §3): a bounded batch per tick.
    await pruneIdempotency(svc.db);
  }, (err) => opts.log('sweep failed', { error: String(err) })));
  // The webhook sender: outbox rows claimed with SKIP LOCKED, so every instance can run it.
  tickers.push(startWebhookSender(svc, { log: opts.log }));
  return {
    async stop() {
      await Promise.all(tickers.map((t) => t.stop()));
    },
  };
}
