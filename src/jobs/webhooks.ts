// The webhook sender: claims due outbox rows, signs each event once, POSTs with bounded concurrency,
// retries with backoff and dead-letters; runs on every instance (CONTRACT §5, DESIGN "jobs/").
import type { Services } from '../services.ts';
import { activeKey, type SigningKey } from '../domain/keys.ts';
import { claimDue, deadLetter, markDelivered, scheduleRetry, storeSignature, type ClaimedRow, type Failure } from '../webhooks/outbox.ts';
import { deliveryHeaders, eventBody, signBody, webhookId } from '../webhooks/event.ts';
import { newDeadLetterId } from '../webhooks/registry.ts';
import { recordAttempt } from '../webhooks/attempts.ts';
import { fetchTransport, type WebhookResult, type WebhookTransport } from '../webhooks/transport.ts';

/**
 * A claim's lease is WEBHOOK_TIMEOUT_MS plus this: time to record the result after the answer. If the
 * process dies mid-send, the row is due again when the lease runs out (at-least-once, never lost).
 */
export const LEASE_MARGIN_MS = 5_000;
/** Sends in flight per instance. Each URL has at most one (per-URL order), so this bounds distinct receivers. */
export const DEFAULT_CONCURRENCY = 16;
const DEFAULT_POLL_MS = 250;

export type Outcome = 'delivered' | 'retry' | 'dead' | 'error';

interface Prepared {
  row: ClaimedRow;
  body: string;
  signature: string;
  signer: string;
}

interface Batch {
  key: SigningKey | null;
  items: Prepared[];
}

/** Claims up to `limit` heads and builds each body; an event's x-proof signature is made once and stored. */
async function claim(svc: Services, limit: number): Promise<Batch> {
  const rows = await claimDue(svc.db, limit, svc.config.webhookTimeoutMs + LEASE_MARGIN_MS);
  if (rows.length === 0) return { key: null, items: [] };
  // Read per batch, not cached: the key lives in the database so every instance signs alike.
  const key = await activeKey(svc.db, 'webhook');
  const made = new Map<string, { signature: string; signer: string }>();
  const items: Prepared[] = [];
  for (const row of rows) {
    const body = eventBody(row.escrowId, row);
    const id = webhookId(row.escrowId, row.idx);
    let sig = row.signature && row.signer ? { signature: row.signature, signer: row.signer } : made.get(id);
    if (!sig) {
      sig = await storeSignature(svc.db, row.escrowId, row.idx, signBody(body, key.secretKey), key.publicKey);
      made.set(id, sig);
    }
    items.push({ row, body, ...sig });
  }
  return { key, items };
}

function guarded(transport: WebhookTransport, timeoutMs: number): WebhookTransport {
  // The transport enforces the timeout itself; this backstop (1 s later) keeps a misbehaving injected
  // transport from holding a sender slot forever. A late answer then counts as a failed attempt.
  return (req) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const backstop = new Promise<WebhookResult>((resolve) => {
      timer = setTimeout(() => resolve({ error: 'timeout' }), timeoutMs + 1_000);
    });
    const sent = transport(req).catch((err: unknown): WebhookResult => ({ error: String((err as Error)?.message ?? err).slice(0, 500) }));
    return Promise.race([sent, backstop]).finally(() => clearTimeout(timer));
  };
}

/** One attempt of one row, and its result recorded: delete, schedule a retry, or dead-letter. */
async function deliver(svc: Services, transport: WebhookTransport, key: SigningKey, p: Prepared): Promise<Outcome> {
  const { row } = p;
  const { webhookTimeoutMs: timeoutMs, webhookAllowPrivate: allowPrivate, webhookBackoffMs: backoff } = svc.config;
  // webhook-timestamp is the process's wall clock, not the sandbox-shifted svc_now(): receivers
  // compare it with their own clock (Standard Webhooks tolerance).
  const headers = deliveryHeaders({
    body: p.body,
    id: webhookId(row.escrowId, row.idx),
    timestamp: Math.floor(svc.nowMs() / 1000),
    proofSignature: p.signature,
    publicKey: p.signer,
    secretKey: key.secretKey,
    userAgent: `escrow-settlement/${svc.version}`,
  });
  const started = performance.now();
  const res = await guarded(transport, timeoutMs)({ url: row.url, headers, body: p.body, timeoutMs, allowPrivate });
  const ok = 'status' in res && res.status >= 200 && res.status <= 299;
  // attempts counts this one: WEBHOOK_BACKOFF_MS has one wait between each pair of attempts, so
  // n waits allow n + 1 attempts (default 1s,5s,25s,60s: 5 attempts, SPEC part 8).
  const last = row.attempts > backoff.length;
  await recordAttempt(svc.db, {
    escrowId: row.escrowId, idx: row.idx, url: row.url, attempt: row.attempts,
    status: 'status' in res ? res.status : null, error: ok ? null : 'status' in res ? `HTTP ${res.status}` : res.error,
    durationMs: performance.now() - started, outcome: ok ? 'delivered' : last ? 'dead' : 'retry',
  });
  if (ok) {
    await markDelivered(svc.db, row.id);
    return 'delivered';
  }
  const f: Failure = 'status' in res ? { error: `HTTP ${res.status}`, status: res.status } : { error: res.error, status: null };
  if (last) {
    await deadLetter(svc.db, row, f, newDeadLetterId());
    return 'dead';
  }
  await scheduleRetry(svc.db, row, f, backoff[row.attempts - 1]);
  return 'retry';
}

export interface SendResult {
  claimed: number;
  delivered: number;
  retried: number;
  deadLettered: number;
  errors: number;
}

/**
 * One pass: claim up to `limit` due heads (one per URL) and send them, at most `concurrency` at once,
 * waiting for all. Tests drive the sender with this; the running service uses startWebhookSender.
 */
export async function sendDueOnce(svc: Services, opts: { limit?: number; concurrency?: number; onError?: (err: unknown) => void } = {}): Promise<SendResult> {
  const transport = svc.webhookTransport ?? fetchTransport();
  const { key, items } = await claim(svc, opts.limit ?? 100);
  const result: SendResult = { claimed: items.length, delivered: 0, retried: 0, deadLettered: 0, errors: 0 };
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const p = items[next++];
      const outcome = await deliver(svc, transport, key!, p).catch((err: unknown) => {
        opts.onError?.(err);
        return 'error' as const;
      });
      if (outcome === 'delivered') result.delivered++;
      else if (outcome === 'retry') result.retried++;
      else if (outcome === 'dead') result.deadLettered++;
      else result.errors++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? DEFAULT_CONCURRENCY, items.length) }, worker));
  return result;
}

type Log = (msg: string, fields?: Record<string, unknown>) => void;

export interface Sender {
  stop(): Promise<void>;
}

/**
 * The running sender: keeps up to `concurrency` sends in flight. A free slot is refilled as soon as a
 * send finishes (so a good receiver's next event goes out at once) or at the next poll, never waiting
 * for a slow receiver: a receiver that hangs holds one slot for at most WEBHOOK_TIMEOUT_MS. Stopping
 * waits for the sends in flight (each bounded by the timeout) so none is left to its lease.
 */
export function startWebhookSender(svc: Services, opts: { log: Log; concurrency?: number; pollMs?: number }): Sender {
  const cap = opts.concurrency ?? DEFAULT_CONCURRENCY;
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  const transport = svc.webhookTransport ?? fetchTransport();
  const inflight = new Set<Promise<void>>();
  let stopped = false;
  let poked = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    poked = true;
    wake?.();
  };
  const nap = () =>
    new Promise<void>((resolve) => {
      if (poked) return resolve();
      const timer = setTimeout(done, pollMs);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      wake = done;
    });
  const loop = (async () => {
    while (!stopped) {
      poked = false;
      const free = cap - inflight.size;
      if (free > 0) {
        try {
          const { key, items } = await claim(svc, free);
          for (const p of items) {
            const run: Promise<void> = deliver(svc, transport, key!, p)
              .then(() => undefined, (err: unknown) => opts.log('webhook delivery could not be recorded', { url: p.row.url, error: String(err) }))
              .finally(() => {
                inflight.delete(run);
                poke();
              });
            inflight.add(run);
          }
        } catch (err) {
          if (!stopped) opts.log('webhook claim failed', { error: String(err) });
        }
      }
      if (!stopped) await nap();
    }
  })();
  return {
    async stop() {
      stopped = true;
      poke();
      await loop;
      await Promise.all([...inflight]);
    },
  };
}
