// A load of mixed lifecycles over HTTP: passing and failing deliveries (sandbox and client-signed),
// refunds, disputes closed by co-signature, by an arbiter's split and by timeout, stages left to
// time out, injected custody failures with retries, and idempotent replays. Workers run until
// stopped or until the service goes away (SIGKILL); a clock ticker moves the sandbox clock so the
// short deadlines pass while the load runs.
import { generateKeys, signDelivery } from '@escrow-settlement/client';
import { Disconnected, Hang, type Call, type HttpRes } from './lib.ts';

export const KINDS = [
  'pass',
  'fail-refund',
  'dispute-cosign',
  'deliver-timeout',
  'client-pass',
  'refund-funded',
  'dispute-timeout',
  'idempotent',
  'resolve-timeout',
  'dispute-arbiter-split',
  'custody-fault',
  'created-only',
] as const;
export type Kind = (typeof KINDS)[number];

const TERMS = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const SHORT = 30;
const RULINGS = ['release', 'refund', 'split'] as const;

/** A step answered with a status the flow did not expect (409 is expected only where a deadline can win). */
class Ended extends Error {}

export interface LoadStats {
  matters: number;
  byKind: Record<string, number>;
  anomalies: string[];
  statuses: Record<string, number>;
  clockAdvances: number;
}

export class Load {
  readonly stats: LoadStats = { matters: 0, byKind: {}, anomalies: [], statuses: {}, clockAdvances: 0 };
  private stopped = false;
  private running: Promise<void>[] = [];
  private seq = 0;

  constructor(
    private readonly call: Call,
    private readonly opts: { workers: number; clockEveryMs: number; advanceSeconds: number },
  ) {}

  start(): void {
    this.stopped = false;
    for (let w = 0; w < this.opts.workers; w++) this.running.push(this.worker(w));
    this.running.push(this.clock());
  }

  /** Stops after the matters in progress; resolves at once when the service died under the load. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
    this.running = [];
  }

  private note(r: HttpRes, what: string) {
    const k = `${what} ${r.status}`;
    this.stats.statuses[k] = (this.stats.statuses[k] ?? 0) + 1;
  }

  private anomaly(what: string, r: HttpRes) {
    this.stats.anomalies.push(`${what}: ${r.status} ${r.text.slice(0, 300)}`);
  }

  /** One request of a flow: an expected status returns the answer; 409 ends the matter where a deadline may have won. */
  private async step(
    what: string,
    method: string,
    path: string,
    body: unknown,
    expect: number[],
    deadlineMayWin: boolean,
    headers?: Record<string, string>,
  ): Promise<HttpRes> {
    const r = await this.call(method, path, body, headers);
    this.note(r, what);
    if (expect.includes(r.status)) return r;
    if (r.status === 409 && deadlineMayWin) throw new Ended();
    this.anomaly(`${what} ${method} ${path}`, r);
    throw new Ended();
  }

  /** A closing answered 502 custody_failed (or a delivery without proof): retry until custody confirms. */
  private async settle(id: string): Promise<void> {
    for (let i = 0; i < 8; i++) {
      const r = await this.call('POST', `/v1/escrows/${id}/custody/retry`);
      this.note(r, 'retry');
      if (r.status === 200) return;
      if (r.status !== 502) return this.anomaly(`custody retry ${id}`, r);
    }
    this.stats.anomalies.push(`custody retry of ${id} kept failing`);
  }

  private async agents() {
    const make = async (label: string) => (await this.step('agent', 'POST', '/v1/agents', { label }, [201], false)).body.id as string;
    return { payer: await make('payer'), payee: await make('payee'), arbiter: await make('arbiter') };
  }

  async matter(kind: Kind, a: { payer: string; payee: string; arbiter: string }): Promise<void> {
    const short = ['deliver-timeout', 'resolve-timeout', 'dispute-timeout'].includes(kind);
    const s = (what: string, method: string, path: string, body: unknown, expect: number[], headers?: Record<string, string>) =>
      this.step(`${kind}/${what}`, method, path, body, expect, short, headers);
    const timeouts =
      kind === 'deliver-timeout'
        ? { deliverWithinSeconds: SHORT }
        : kind === 'resolve-timeout'
          ? { resolveWithinSeconds: SHORT }
          : kind === 'dispute-timeout'
            ? { decideWithinSeconds: SHORT, timeoutRuling: RULINGS[this.seq++ % 3] }
            : undefined;
    const client = kind === 'client-pass' ? { payer: generateKeys(), payee: generateKeys() } : undefined;
    const create = {
      amount: `${1 + (this.seq++ % 97)}.${this.seq % 10}`,
      asset: 'USDC',
      terms: TERMS,
      ...(client
        ? { payer: { publicKey: client.payer.publicKey }, payee: { publicKey: client.payee.publicKey } }
        : { payerAgentId: a.payer, payeeAgentId: a.payee }),
      ...(kind === 'dispute-arbiter-split' ? { arbiterAgentId: a.arbiter } : {}),
      ...(timeouts ? { timeouts } : {}),
    };
    let id: string;
    // A client signs submittedAt on the service's clock (the sandbox clock runs ahead of the wall clock).
    let fundedAt: string | undefined;
    if (kind === 'idempotent') {
      const key = `idem-${Date.now()}-${this.seq++}-${Math.random()}`;
      const first = await s('create', 'POST', '/v1/escrows', create, [201], { 'idempotency-key': key });
      const again = await s('create-replay', 'POST', '/v1/escrows', create, [201], { 'idempotency-key': key });
      id = first.body.id;
      if (again.body.id !== id || again.headers['idempotent-replayed'] !== 'true') this.anomaly('idempotent create replay differs', again);
      const f1 = await s('fund', 'POST', `/v1/escrows/${id}/fund`, undefined, [200], { 'idempotency-key': key });
      const f2 = await s('fund-replay', 'POST', `/v1/escrows/${id}/fund`, undefined, [200], { 'idempotency-key': key });
      if (f2.text !== f1.text || f2.headers['idempotent-replayed'] !== 'true') this.anomaly('idempotent fund replay differs', f2);
    } else {
      id = (await s('create', 'POST', '/v1/escrows', create, [201])).body.id;
      if (kind === 'created-only') return;
      if (kind === 'custody-fault') await s('fail-next', 'POST', '/v1/sandbox/custody/fail-next', { count: 1 }, [200]);
      fundedAt = (await s('fund', 'POST', `/v1/escrows/${id}/fund`, undefined, [200])).body.updatedAt;
    }
    const base = `/v1/escrows/${id}`;
    switch (kind) {
      case 'deliver-timeout':
        return;
      case 'refund-funded':
      case 'custody-fault': {
        const r = await s('refund', 'POST', `${base}/refund`, undefined, [200, 502]);
        if (r.status === 502) await this.settle(id);
        return;
      }
      case 'pass':
      case 'idempotent':
      case 'client-pass': {
        const body = client
          ? signDelivery(client.payee.secretKey, { escrowId: id, payload: { title: 'done', n: this.seq }, submittedAt: fundedAt })
          : { agentId: a.payee, payload: { title: 'done' } };
        const r = await s('deliver', 'POST', `${base}/delivery`, body, [201]);
        if (!r.body.proof) await this.settle(id);
        return;
      }
      default:
        break;
    }
    // Every other kind delivers a payload that fails the shape check.
    await s('deliver-fail', 'POST', `${base}/delivery`, { agentId: a.payee, payload: { body: 'no title' } }, [201]);
    if (kind === 'resolve-timeout') return;
    if (kind === 'fail-refund') {
      const r = await s('refund', 'POST', `${base}/refund`, undefined, [200, 502]);
      if (r.status === 502) await this.settle(id);
      return;
    }
    const opener = kind === 'dispute-arbiter-split' ? a.payee : a.payer;
    const other = opener === a.payer ? a.payee : a.payer;
    await s('dispute', 'POST', `${base}/dispute`, { agentId: opener, reason: 'the title is missing' }, [201]);
    await s('evidence', 'POST', `${base}/dispute/evidence`, { agentId: other, note: 'see attachment', payload: { page: 1 } }, [200]);
    if (kind === 'dispute-timeout') return;
    const ruling =
      kind === 'dispute-arbiter-split'
        ? { outcome: 'split', rationale: 'partly delivered', shares: { payerBps: 3000, payeeBps: 7000 }, agentIds: [a.arbiter] }
        : { outcome: 'release', agentIds: [a.payer, a.payee] };
    const r = await s('resolve', 'POST', `${base}/dispute/resolve`, ruling, [200, 502]);
    if (r.status === 502) await this.settle(id);
  }

  private async worker(w: number): Promise<void> {
    try {
      const a = await this.agents();
      for (let i = w; !this.stopped; i++) {
        const kind = KINDS[i % KINDS.length];
        try {
          await this.matter(kind, a);
        } catch (err) {
          if (!(err instanceof Ended)) throw err;
        }
        this.stats.matters++;
        this.stats.byKind[kind] = (this.stats.byKind[kind] ?? 0) + 1;
      }
    } catch (err) {
      if (err instanceof Disconnected) return; // the process was killed under the load
      if (err instanceof Ended) return;
      if (err instanceof Hang) this.stats.anomalies.push(String(err));
      else throw err;
    }
  }

  private async clock(): Promise<void> {
    try {
      while (!this.stopped) {
        await new Promise((r) => setTimeout(r, this.opts.clockEveryMs));
        if (this.stopped) return;
        const r = await this.call('POST', '/v1/sandbox/clock', { advanceSeconds: this.opts.advanceSeconds });
        if (r.status !== 200) this.anomaly('clock', r);
        else this.stats.clockAdvances++;
      }
    } catch (err) {
      if (!(err instanceof Disconnected)) this.stats.anomalies.push(String(err));
    }
  }
}
