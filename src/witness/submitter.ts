// The witness submitter (c2sp.org/tlog-witness, docs/witnessing.md): each tick, the current signed
// head goes to every configured witness that has not cosigned it, with a consistency proof from the
// size that witness last reported. It runs beside the log, never in front of it: closings neither
// wait for it nor share a transaction with it, and no database work is held across a request.
import type { Services } from '../services.ts';
import { consistencyBetween } from '../tlog/store.ts';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { issuerNoteAt } from './note.ts';
import { addCheckpointBody, interpretAnswer, MAX_ANSWER_BYTES, type Answer } from './protocol.ts';
import { claimDue, failed, keepCheckpoint, keepCosignature, releaseClaim, storedCheckpoint, witnessAt } from './store.ts';
import type { WitnessConfig } from '../config/witness.ts';

type Log = (msg: string, fields?: Record<string, unknown>) => void;

export interface SubmitOptions {
  log: Log;
  /** How a submission leaves the process (default: the service's witnessFetch, else global fetch). */
  fetch?: typeof fetch;
  /** Bound on one request, connect to last byte (default 10 s). */
  timeoutMs?: number;
  /** Aborted when the service stops: requests in flight end at once and nothing is recorded for them. */
  signal?: AbortSignal;
}

export interface Submitted {
  witness: string;
  size: number;
  outcome: Answer['kind'];
  reason?: string;
}

/** Longest wait between attempts to a failing witness. */
export const MAX_BACKOFF_MS = 300_000;
/**
 * Longest wait before a refusal (a 409 naming a larger size, a 422) is asked again, by the submitter
 * and by the anchor's checks (docs/witnessing.md "When a witness disagrees").
 */
export const MAX_REFUSAL_BACKOFF_MS = 60_000;
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Doubling waits from WITNESS_INTERVAL_MS, capped: the `failures`-th retry. */
export const backoffMs = (intervalMs: number, failures: number) => Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** Math.min(failures + 1, 30));

/**
 * Reads at most MAX_ANSWER_BYTES of a body as text: a witness cannot make us buffer megabytes.
 * `oversized`: the body went on beyond that, and the rest was not read.
 */
async function boundedText(res: Response): Promise<{ text: string; oversized: boolean }> {
  if (!res.body) return { text: '', oversized: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    total += value.length;
    if (total > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {});
      break;
    }
  }
  const all = new Uint8Array(Math.min(total, MAX_ANSWER_BYTES));
  let pos = 0;
  for (const c of chunks) {
    const take = Math.min(c.length, all.length - pos);
    all.set(c.subarray(0, take), pos);
    pos += take;
    if (pos >= all.length) break;
  }
  return { text: new TextDecoder().decode(all), oversized: total > MAX_ANSWER_BYTES };
}

/** One add-checkpoint request to `w`: its answer (status, type, bounded body), or why there was none. */
export async function exchange(
  w: WitnessConfig,
  body: string,
  doFetch: typeof fetch,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<{ status: number; contentType: string; body: string; oversized: boolean } | { error: string }> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const res = await doFetch(`${w.url}/add-checkpoint`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body,
      redirect: 'manual',
      signal: stop ? AbortSignal.any([timeout, stop]) : timeout,
    });
    const { text, oversized } = await boundedText(res);
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: text, oversized };
  } catch (err) {
    const e = err as { name?: string; message?: string; cause?: { code?: string } };
    if (timeout.aborted || e?.name === 'TimeoutError') return { error: `no answer within ${timeoutMs} ms` };
    return { error: `no answer: ${String(e?.cause?.code ?? e?.message ?? err).slice(0, 300)}` };
  }
}

/**
 * One round: claims the due witnesses, submits the current head to each (side by side), verifies
 * and keeps what they cosign. Returns what happened to each witness tried.
 */
export async function submitOnce(svc: Services, opts: SubmitOptions): Promise<Submitted[]> {
  const { witnesses, logOrigin, witnessIntervalMs } = svc.config;
  if (witnesses.length === 0) return [];
  // While the anchor asks the witnesses itself (start, another server, an adverse answer) or holds
  // issuance (behind them), this round sends nothing: one conversation per witness at a time.
  if (svc.anchor.state() !== 'open' && svc.anchor.state() !== 'ok') return [];
  const head = await issuerNoteAt(svc.db, logOrigin);
  if (head.size === 0) return [];
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const claimed = await claimDue(
    svc.db,
    witnesses.map((w) => w.vkey),
    head.size,
    timeoutMs + 5_000,
  );
  if (claimed.length === 0) return [];
  await keepCheckpoint(svc.db, head.size, head.note);
  // The note as first stored for this size: the same text, so any instance's copy is cosigned alike.
  const note = (await storedCheckpoint(svc.db, head.size)) ?? head.note;
  const doFetch = opts.fetch ?? svc.witnessFetch ?? ((input, init) => globalThis.fetch(input, init));
  return Promise.all(
    claimed.map(async (c): Promise<Submitted> => {
      const w = witnesses.find((x) => x.vkey === c.vkey)!;
      const fail = async (reason: string, maxWaitMs = MAX_BACKOFF_MS): Promise<Submitted> => {
        opts.log('witness submission failed', { witness: w.name, url: w.url, size: head.size, reason });
        await failed(svc.db, w.vkey, reason, Math.min(maxWaitMs, backoffMs(witnessIntervalMs, c.failures)));
        return { witness: w.name, size: head.size, outcome: 'failed', reason };
      };
      try {
        const old = c.witnessSize;
        if (old > head.size) return await fail(`the witness is recorded at size ${old}, beyond the log's ${head.size}`);
        const proof = old > 0 && old < head.size ? (await consistencyBetween(svc.db, old, head.size)).path.map((h) => fromHex(h)) : [];
        const answer = await exchange(w, addCheckpointBody(old, proof, note), doFetch, timeoutMs, opts.signal);
        if (opts.signal?.aborted) {
          // Stopping, not a witness fault: the claim is released for the next instance or start.
          await releaseClaim(svc.db, w.vkey);
          return { witness: w.name, size: head.size, outcome: 'failed', reason: 'the service is stopping' };
        }
        if ('error' in answer) return await fail(answer.error);
        const meaning = interpretAnswer(answer, head.text, w.vkey, head.size);
        if (meaning.kind === 'failed') return await fail(meaning.reason);
        if (meaning.kind === 'ahead' || meaning.kind === 'inconsistent') {
          // A claim that the database is behind or forked: the anchor asks every witness again, and
          // closes the gate first only once as many witnesses as the quorum have said so
          // (docs/witnessing.md "When a witness disagrees").
          svc.anchor.dissent(w.vkey);
          // A refusal is asked again at most 60 s apart, as the anchor's retries are.
          return await fail(
            meaning.kind === 'ahead'
              ? `409 says the witness has size ${meaning.size}, larger than the log's ${head.size}: this database is behind what it cosigned`
              : meaning.reason,
            MAX_REFUSAL_BACKOFF_MS,
          );
        }
        if (meaning.kind === 'conflict') {
          // A 409 naming the size we just sent from would loop: the witness contradicts itself.
          if (meaning.size === old) return await fail(`409 names size ${old}, the size this request was sent from`);
          await witnessAt(svc.db, w.vkey, meaning.size);
          return {
            witness: w.name,
            size: head.size,
            outcome: 'conflict',
            reason: `the witness is at size ${meaning.size}; resending from it`,
          };
        }
        await keepCosignature(svc.db, w.vkey, head.size, meaning.line, meaning.timestamp);
        return { witness: w.name, size: head.size, outcome: 'cosigned' };
      } catch (err) {
        return fail(`could not submit: ${String((err as Error)?.message ?? err).slice(0, 300)}`);
      }
    }),
  );
}
