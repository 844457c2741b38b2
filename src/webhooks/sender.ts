// The webhook sender's engine: per-URL lanes of claimed rows, up to N requests in flight per URL and
// at most WEBHOOK_KEY_MAX_IN_FLIGHT rows held per key over all its URLs (the fair share: one key's
// dead receivers cannot hold every slot, and inside it each URL has places of its own, so one dead
// URL cannot hold another's either, docs/security.md), results recorded in batches. src/jobs/webhooks.ts drives it (a loop, or one pass for tests).
import type { Config } from '../config.ts';
import type { Db } from '../db/types.ts';
import { newId } from '../crypto/ids.ts';
import { recordAttempts, type AttemptRecord } from './attempts.ts';
import {
  claimRuns,
  flushAndLock,
  queueDisabledNotices,
  recordEndpoints,
  release,
  type ClaimedRow,
  type EndpointOutcome,
  type FailedAttempt,
  type NewSignature,
} from './outbox.ts';
import { deliveryHeaders, eventBody, signBody, webhookId, type Signer } from './event.ts';
import { newDeadLetterId } from './registry.ts';
import { secretKeyBytes } from './standard.ts';
import { fetchTransport, type WebhookResult, type WebhookTransport } from './transport.ts';
import { WebhookKeyring } from './keyring.ts';
import type { WebhookSigningKeys } from './keyring.ts';

/** What the sender needs from the app: the store, its webhook settings, a clock and how requests leave. */
export interface SenderDeps {
  db: Db;
  config: Pick<
    Config,
    'webhookTimeoutMs' | 'webhookAllowPrivate' | 'webhookBackoffMs' | 'webhookKeyMaxInFlight' | 'webhookDisableAfterHours'
  >;
  nowMs: () => number;
  version: string;
  webhookTransport?: WebhookTransport;
  /** The webhook keys that sign while this one (hex) is active: held or loaded from their sources, never read from the database (docs/keys.md). */
  webhookSigningKeys(activePublicKeyHex: string): Promise<WebhookSigningKeys>;
}

/**
 * A claim's lease is WEBHOOK_TIMEOUT_MS plus this: time to record the result after the answer. If the
 * process dies mid-send, the row is due again when the lease runs out (at-least-once, never lost).
 */
export const LEASE_MARGIN_MS = 5_000;
/** A queued row must start its attempt with at least a timeout plus this much lease left, else it is released. */
const START_SAFETY_MS = 1_000;
/** A URL answering within this (2xx) counts as fast and gets a queue of PREFETCH runs behind its in-flight ones. */
const FAST_MS = 1_000;
const PREFETCH_RUNS = 15;
/** Rows one sender holds at most, over all URLs (queued or in flight). */
export const MAX_HELD = 4096;
/** Deliveries started in one turn of the event loop; the rest of a burst waits for the next turn. */
const START_BATCH = 16;
/**
 * A URL that keeps failing has its failures written (for WEBHOOK_DISABLE_AFTER_HOURS) at most once a
 * minute by one sender, or a tenth of WEBHOOK_DISABLE_AFTER_HOURS when that is shorter; a change
 * (its first failure, a success) is written at once. So hundreds of dead URLs cost the tick's
 * statement nothing between checks, and a URL is disabled at most that long after its time is up.
 */
export const failingCheckMs = (disableAfterHours: number) =>
  disableAfterHours > 0 ? Math.min(60_000, (disableAfterHours * 3_600_000) / 10) : 60_000;

export type Outcome = 'delivered' | 'retry' | 'dead' | 'error';

/** Each endpoint's attempts in the order they ended, summed up for its failing-since clock (outbox.ts flushAndLock). */
export function endpointOutcomes(attempts: ReadonlyArray<AttemptRecord>): EndpointOutcome[] {
  const by = new Map<string, EndpointOutcome>();
  for (const a of attempts) {
    const prev = by.get(a.url);
    if (a.outcome === 'delivered') by.set(a.url, { url: a.url, ok: true, fresh: false, error: null });
    else by.set(a.url, { url: a.url, ok: false, fresh: prev ? prev.ok || prev.fresh : false, error: a.error });
  }
  return [...by.values()];
}

interface Held {
  row: ClaimedRow;
  body: string;
  signature: string;
  signer: string;
  claimedAt: number;
}

interface Lane {
  queue: Held[];
  inflight: number;
  /** The last attempt failed or took longer than FAST_MS: no queue behind the in-flight ones. */
  slow: boolean;
}

export interface EngineOptions {
  /** Requests in flight per URL (WEBHOOK_CONCURRENCY). */
  perUrl: number;
  /** Queue runs behind the in-flight ones for fast URLs (a running sender); one pass uses none. */
  prefetch: boolean;
  onOutcome?: (o: Outcome, url: string) => void;
  onError?: (what: string, err: unknown, url?: string) => void;
}

function guarded(transport: WebhookTransport, timeoutMs: number): WebhookTransport {
  // The transport enforces the timeout itself; this backstop (1 s later) keeps a misbehaving injected
  // transport from holding a lane slot forever. A late answer then counts as a failed attempt.
  return (req) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const backstop = new Promise<WebhookResult>((resolve) => {
      timer = setTimeout(() => resolve({ error: 'timeout' }), timeoutMs + 1_000);
    });
    const sent = transport(req).catch((err: unknown): WebhookResult => ({ error: String((err as Error)?.message ?? err).slice(0, 500) }));
    return Promise.race([sent, backstop]).finally(() => clearTimeout(timer));
  };
}

export class SenderEngine {
  /** This sender's lease owner id: distinct per engine, so two engines in one process exclude each other too. */
  readonly owner = newId('snd');
  private readonly lanes = new Map<string, Lane>();
  private readonly held = new Map<string, Held>();
  /** Rows held per owner (the key that registered the URL; '' for root): the fair share's ledger. */
  private readonly heldByOwner = new Map<string, number>();
  /** Rows held per URL: what each URL uses of its own places in its owner's share. */
  private readonly heldByUrl = new Map<string, number>();
  /** Each URL's outcome as last written (ok, or failing) and when: unchanged failures are written every failingCheckMs. */
  private readonly endpointWritten = new Map<string, { ok: boolean; at: number }>();
  private readonly failingCheckMs: number;
  private delivered: string[] = [];
  private failed: FailedAttempt[] = [];
  private sigs: NewSignature[] = [];
  /** Every POST's status and timing, written with the tick's results (GET /v1/webhooks/attempts). */
  private attempts: AttemptRecord[] = [];
  private toRelease: Held[] = [];
  private readonly sigCache = new Map<string, { signature: string; signer: string }>();
  private readonly keyCache = new Map<string, Uint8Array>();
  private readonly keyring: WebhookKeyring;
  private readonly inflight = new Set<Promise<void>>();
  /** Set while the rest of a burst waits for the next turn of the event loop (pump). */
  private pumpScheduled: Promise<void> | null = null;
  private readonly transport: WebhookTransport;
  private readonly leaseMs: number;
  /** Called when a request finishes: a lane has room again and results wait to be flushed. */
  onSettled: () => void = () => {};

  constructor(
    private readonly svc: SenderDeps,
    private readonly opts: EngineOptions,
  ) {
    this.transport = guarded(svc.webhookTransport ?? fetchTransport(), svc.config.webhookTimeoutMs);
    this.leaseMs = svc.config.webhookTimeoutMs + LEASE_MARGIN_MS;
    this.keyring = new WebhookKeyring(
      (active) => svc.webhookSigningKeys(active),
      (what) => opts.onError?.('a webhook key in its overlap cannot be loaded here; deliveries go without its signature', new Error(what)),
    );
    this.failingCheckMs = failingCheckMs(svc.config.webhookDisableAfterHours);
  }

  /**
   * One transaction: write the results gathered since the last tick and, when `claim` and the claim
   * lock is free, claim more rows (up to `limit`). Returns how many rows were claimed. On error
   * nothing gathered is lost: it is written by the next tick.
   */
  async tick(claim: boolean, limit = MAX_HELD - this.held.size): Promise<number> {
    if (this.toRelease.length > 0) {
      const rows = this.toRelease;
      this.toRelease = [];
      await release(
        this.svc.db,
        this.owner,
        rows.map((h) => h.row),
      ).catch((err) => {
        this.toRelease.push(...rows);
        throw err;
      });
      for (const h of rows) this.unhold(h.row.id);
    }
    const attempts = this.attempts;
    const nowMs = Date.now();
    const endpoints = endpointOutcomes(attempts).filter((o) => {
      const w = this.endpointWritten.get(o.url);
      return !w || w.ok !== o.ok || o.fresh || (!o.ok && nowMs - w.at >= this.failingCheckMs);
    });
    const results = { delivered: this.delivered, failed: this.failed, sigs: this.sigs };
    this.delivered = [];
    this.failed = [];
    this.sigs = [];
    this.attempts = [];
    const wantClaim = claim && limit > 0;
    let rows: ClaimedRow[] = [];
    try {
      if (!wantClaim && results.delivered.length + results.failed.length + results.sigs.length === 0) return 0;
      rows = await this.svc.db.tx(async (tx) => {
        await recordAttempts(tx, attempts);
        const disabled = await recordEndpoints(tx, endpoints, this.svc.config.webhookDisableAfterHours);
        await queueDisabledNotices(
          tx,
          disabled.map((d) => ({ ...d, id: newId('whn') })),
        );
        const locked = await flushAndLock(tx, results, wantClaim);
        if (!locked) return [];
        const slowUrls = [...this.lanes].filter(([, l]) => l.slow).map(([url]) => url);
        const hold = this.opts.prefetch ? this.opts.perUrl * (1 + PREFETCH_RUNS) : this.opts.perUrl;
        return claimRuns(tx, {
          owner: this.owner,
          hold,
          slowUrls,
          holdSlow: this.opts.perUrl,
          limit,
          leaseMs: this.leaseMs,
          ownerMax: this.svc.config.webhookKeyMaxInFlight,
          ownerHeld: this.heldByOwner,
          reserveMax: this.opts.perUrl,
          urlHeld: this.heldByUrl,
        });
      });
    } catch (err) {
      this.delivered.push(...results.delivered);
      this.failed.push(...results.failed);
      this.sigs.push(...results.sigs);
      this.attempts.push(...attempts);
      throw err;
    }
    for (const s of results.sigs) this.sigCache.delete(webhookId(s.escrowId, s.idx));
    // The keys of this claim (one active key per statement); claimed rows not queued on a failure here are due again when their lease ends.
    if (rows.length > 0) await this.keyring.ready(rows[0].keyPublic);
    if (this.endpointWritten.size > 10_000) this.endpointWritten.clear();
    for (const o of endpoints) this.endpointWritten.set(o.url, { ok: o.ok, at: nowMs });
    const now = Date.now();
    for (const row of rows) {
      // A row still held here (its lease ran out under us and we claimed it again) is not sent twice.
      if (this.held.has(row.id)) continue;
      const h = this.prepare(row, now);
      this.held.set(row.id, h);
      this.heldByOwner.set(row.owner, (this.heldByOwner.get(row.owner) ?? 0) + 1);
      this.heldByUrl.set(row.url, (this.heldByUrl.get(row.url) ?? 0) + 1);
      this.lane(row.url).queue.push(h);
    }
    return rows.length;
  }

  /** A held row is done with (sent and answered, or handed back): its owner's share has room again. */
  private unhold(id: string): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    const n = (this.heldByOwner.get(h.row.owner) ?? 1) - 1;
    if (n <= 0) this.heldByOwner.delete(h.row.owner);
    else this.heldByOwner.set(h.row.owner, n);
    const u = (this.heldByUrl.get(h.row.url) ?? 1) - 1;
    if (u <= 0) this.heldByUrl.delete(h.row.url);
    else this.heldByUrl.set(h.row.url, u);
  }

  private lane(url: string): Lane {
    let l = this.lanes.get(url);
    if (!l) this.lanes.set(url, (l = { queue: [], inflight: 0, slow: false }));
    return l;
  }

  /** Each endpoint's HMAC key (the stored base64 secret, decoded once). */
  private hmacKey(secret: string): Uint8Array {
    let k = this.keyCache.get(secret);
    if (!k) {
      if (this.keyCache.size > 10_000) this.keyCache.clear();
      this.keyCache.set(secret, (k = secretKeyBytes(secret)));
    }
    return k;
  }

  /** The Ed25519 signer of the webhook key (its public key read with every claim). */
  private signer(publicKey: string): Signer {
    return this.keyring.signer(publicKey);
  }

  /** The body and the event's x-proof signature: stored, or made once here and stored by the next tick. */
  private prepare(row: ClaimedRow, now: number): Held {
    const body = eventBody(row.escrowId, row);
    // x-proof-signature is by the active key: one stored by a key rotated out since is made again.
    if (row.signature && row.signer === row.keyPublic) return { row, body, signature: row.signature, signer: row.signer, claimedAt: now };
    const id = webhookId(row.escrowId, row.idx);
    let sig = this.sigCache.get(id);
    if (sig?.signer !== row.keyPublic) {
      sig = { signature: signBody(body, this.signer(row.keyPublic)), signer: row.keyPublic };
      this.sigCache.set(id, sig);
      this.sigs.push({ escrowId: row.escrowId, idx: row.idx, signature: sig.signature, publicKey: sig.signer });
    }
    return { row, body, ...sig, claimedAt: now };
  }

  /**
   * Whether a tick now would do more than write results: some fast lane's queue is down to fewer rows
   * than it may have in flight (it may run dry before the next poll), or many results wait to be
   * written. A slow lane never has a queue (it holds only what it has in flight), so it does not ask
   * for a tick: its retries are claimed at the next poll, and a key's hundreds of dead URLs cannot
   * turn every finished request into a claim (docs/security.md "Webhook fairness").
   */
  wantsTick(): boolean {
    if (this.delivered.length + this.failed.length >= 256) return true;
    for (const lane of this.lanes.values()) if (!lane.slow && lane.queue.length < this.opts.perUrl) return true;
    return false;
  }

  /**
   * Starts queued rows on lanes with room, fast lanes first and each lane moved to the back once it
   * started one (a rotation, so no URL's place in the map decides who goes first). At most START_BATCH
   * start in one turn of the event loop: each start signs and opens a request synchronously, so a
   * burst of hundreds (a dead key's timeouts all ending together) yields to other work between
   * batches (docs/security.md "Webhook fairness"). A row whose lease ran too low is released instead.
   */
  pump(): void {
    if (this.pumpScheduled) return;
    let started = 0;
    for (const slowPass of [false, true]) {
      for (const [url, lane] of [...this.lanes]) {
        if (lane.slow !== slowPass) continue;
        while (lane.inflight < this.opts.perUrl && lane.queue.length > 0) {
          if (started >= START_BATCH) {
            this.pumpScheduled = new Promise<void>((resolve) =>
              setImmediate(() => {
                this.pumpScheduled = null;
                resolve();
                this.pump();
              }),
            );
            return;
          }
          if (this.start(url, lane)) started++;
        }
        if (started > 0 && this.lanes.get(url) === lane) {
          // To the back of the rotation.
          this.lanes.delete(url);
          this.lanes.set(url, lane);
        }
      }
    }
  }

  /** Starts the lane's next queued row; false when it was released instead (its lease ran too low). */
  private start(url: string, lane: Lane): boolean {
    const latest = Date.now() - (this.leaseMs - this.svc.config.webhookTimeoutMs - START_SAFETY_MS);
    const h = lane.queue.shift()!;
    if (h.claimedAt < latest) {
      this.toRelease.push(h);
      return false;
    }
    lane.inflight++;
    const run: Promise<void> = this.deliver(h, lane)
      .then((o) => this.opts.onOutcome?.(o, url))
      .finally(() => {
        lane.inflight--;
        this.unhold(h.row.id);
        this.inflight.delete(run);
        if (lane.inflight === 0 && lane.queue.length === 0 && !lane.slow && this.lanes.get(url) === lane) this.lanes.delete(url);
        this.pump();
        this.onSettled();
      });
    this.inflight.add(run);
    return true;
  }

  /** Waits for every request in flight (each bounded by the timeout), pumping queued rows as lanes free. */
  async settle(): Promise<void> {
    while (this.inflight.size > 0 || this.pumpScheduled) {
      await (this.inflight.size > 0 ? Promise.race([...this.inflight]) : this.pumpScheduled);
    }
  }

  /** Hands every queued (unsent) row back to the outbox; a stopping sender calls this before its last tick. */
  releaseQueued(): void {
    for (const lane of this.lanes.values()) this.toRelease.push(...lane.queue.splice(0));
  }

  /** One attempt of one row; its result (delivered, retry or dead letter) is written by the next tick. */
  private async deliver(h: Held, lane: Lane): Promise<Outcome> {
    const { row } = h;
    const { webhookTimeoutMs: timeoutMs, webhookAllowPrivate: allowPrivate, webhookBackoffMs: backoff } = this.svc.config;
    const started = Date.now();
    try {
      // webhook-timestamp is the process's wall clock, not the sandbox-shifted svc_now(): receivers
      // compare it with their own clock (Standard Webhooks tolerance).
      const headers = deliveryHeaders({
        body: h.body,
        id: webhookId(row.escrowId, row.idx),
        timestamp: Math.floor(this.svc.nowMs() / 1000),
        proofSignature: h.signature,
        publicKey: h.signer,
        sign: this.signer(row.keyPublic),
        previous: this.keyring.previous(row.keyPublic),
        hmacKey: row.secret ? this.hmacKey(row.secret) : null,
        userAgent: `escrow-settlement/${this.svc.version}`,
        destination: row.url,
      });
      const res = await this.transport({ url: row.url, headers, body: h.body, timeoutMs, allowPrivate });
      const ok = 'status' in res && res.status >= 200 && res.status <= 299;
      lane.slow = !ok || Date.now() - started > FAST_MS;
      const dead = row.attempts > backoff.length;
      this.attempts.push({
        escrowId: row.escrowId,
        idx: row.idx,
        url: row.url,
        attempt: row.attempts,
        status: 'status' in res ? res.status : null,
        error: ok ? null : 'status' in res ? `HTTP ${res.status}` : res.error,
        durationMs: Date.now() - started,
        outcome: ok ? 'delivered' : dead ? 'dead' : 'retry',
      });
      if (ok) {
        this.delivered.push(row.id);
        return 'delivered';
      }
      const failure = 'status' in res ? { error: `HTTP ${res.status}`, status: res.status } : { error: res.error, status: null };
      // attempts counts this one: WEBHOOK_BACKOFF_MS has one wait between each pair of attempts, so
      // n waits allow n + 1 attempts (default 1s,5s,25s,60s: 5 attempts, docs/protocol.md §14.3).
      this.failed.push({
        id: row.id,
        attempts: row.attempts,
        ...failure,
        waitMs: dead ? 0 : backoff[row.attempts - 1],
        deadLetterId: dead ? newDeadLetterId() : null,
      });
      return dead ? 'dead' : 'retry';
    } catch (err) {
      // Building the headers failed (a corrupt stored secret, say): the row stays leased and is due
      // again when the lease ends; the log says why.
      this.opts.onError?.('webhook delivery failed before sending', err, row.url);
      return 'error';
    }
  }
}
