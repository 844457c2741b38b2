// Asking the witnesses before appending (docs/operations.md §3): the database's newest checkpoint
// goes to every witness, whatever the database says it last sent them (the database is what may
// have been rolled back), and their answers move the anchor (src/tlog/anchor.ts): the quorum's
// cosignatures open the gate; WITNESS_QUORUM witnesses holding a larger tree, or finding ours
// inconsistent, stop issuance. A 409 naming a size or a 422 is a claim: fewer dissenters than the
// quorum are logged and counted and stop nothing, and every refusal is asked again with backoff
// (docs/witnessing.md "When a witness disagrees").
import type { Services } from '../services.ts';
import { consistencyBetween, logSize } from '../tlog/store.ts';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { issuerNoteAt } from './note.ts';
import { addCheckpointBody, interpretAnswer } from './protocol.ts';
import { DEFAULT_TIMEOUT_MS, exchange, MAX_REFUSAL_BACKOFF_MS } from './submitter.ts';
import { keepCheckpoint, keepCosignature, storedCheckpoint, witnessAt } from './store.ts';
import type { WitnessConfig } from '../config/witness.ts';

type Log = (msg: string, fields?: Record<string, unknown>) => void;

export type Confirmation =
  | { kind: 'cosigned'; size: number }
  | { kind: 'ahead'; size: number }
  | { kind: 'inconsistent'; size: number; reason: string }
  | { kind: 'failed'; reason: string };

export interface CheckOptions {
  log: Log;
  fetch?: typeof fetch;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What a round found: the gate's new state, or nothing decided (not enough witnesses answered). */
export type RoundResult =
  | { outcome: 'confirmed'; size: number; witnessed: number }
  | { outcome: 'behind'; size: number; witnessed: number; dissenting: number; forked: boolean }
  | { outcome: 'undecided'; reasons: string[] };
/** At most this many add-checkpoint requests per witness per round (a 409 names its size; one resend). */
const MAX_EXCHANGES = 3;

async function witnessSizeHint(svc: Services, vkey: string): Promise<number> {
  const [row] = await svc.db.query<{ size: string }>('SELECT witness_size::text AS size FROM witness_state WHERE vkey = $1', [vkey]);
  return row ? Number(row.size) : 0;
}

/** One witness: the checkpoint of `size` from the size it says it holds, until it cosigns or says why not. */
async function confirmOne(
  svc: Services,
  w: WitnessConfig,
  head: { size: number; note: string; text: string },
  opts: CheckOptions,
): Promise<Confirmation> {
  const doFetch = opts.fetch ?? svc.witnessFetch ?? ((input, init) => globalThis.fetch(input, init));
  // The database's record of the witness is only a hint: a 409 corrects it.
  let old = Math.min(await witnessSizeHint(svc, w.vkey), head.size);
  for (let i = 0; i < MAX_EXCHANGES; i++) {
    const proof = old > 0 && old < head.size ? (await consistencyBetween(svc.db, old, head.size)).path.map((h) => fromHex(h)) : [];
    const answer = await exchange(w, addCheckpointBody(old, proof, head.note), doFetch, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.signal);
    if ('error' in answer) return { kind: 'failed', reason: answer.error };
    const meaning = interpretAnswer(answer, head.text, w.vkey, head.size);
    switch (meaning.kind) {
      case 'cosigned':
        await keepCosignature(svc.db, w.vkey, head.size, meaning.line, meaning.timestamp);
        return { kind: 'cosigned', size: head.size };
      case 'ahead':
        return { kind: 'ahead', size: meaning.size };
      case 'inconsistent':
        return { kind: 'inconsistent', size: old, reason: meaning.reason };
      case 'conflict':
        if (meaning.size === old) {
          // tlog-witness: a 409 at the size we sent from, when that is the checkpoint's own size,
          // means the witness holds this size with another root: the trees differ.
          if (old === head.size && head.size > 0)
            return { kind: 'inconsistent', size: old, reason: `409 at size ${old}: the witness holds another tree of that size` };
          return { kind: 'failed', reason: `409 names size ${old}, the size this request was sent from` };
        }
        await witnessAt(svc.db, w.vkey, meaning.size);
        old = meaning.size;
        break;
      case 'failed':
        return { kind: 'failed', reason: meaning.reason };
    }
  }
  return { kind: 'failed', reason: `still answering 409 after ${MAX_EXCHANGES} requests` };
}

/**
 * One round: the newest checkpoint to every witness, then what their answers mean
 * (docs/witnessing.md "When a witness disagrees"):
 *
 * - behind: at least WITNESS_QUORUM witnesses say the database holds less than they do, or a tree
 *   inconsistent with theirs; fewer could not have cosigned a checkpoint ahead of the database. A
 *   witness holding more is believed only if the database, read again after the answer, still holds
 *   less (another instance may have grown the log meanwhile). A log at size 0 is never behind.
 * - confirmed: the quorum has answered and no checkpoint ahead of ours can have its quorum: the
 *   quorum cosigned ours, or so many cosigned it (n − quorum + 1) that the rest are too few.
 * - undecided otherwise: asked again with backoff.
 */
export async function checkRound(svc: Services, opts: CheckOptions): Promise<RoundResult> {
  const { witnesses, witnessQuorum: quorum, logOrigin } = svc.config;
  const head = await issuerNoteAt(svc.db, logOrigin);
  if (head.size > 0) await keepCheckpoint(svc.db, head.size, head.note);
  const note = (head.size > 0 ? await storedCheckpoint(svc.db, head.size) : null) ?? head.note;
  const results = await Promise.all(
    witnesses.map(async (w) => {
      try {
        return { w, r: await confirmOne(svc, w, { ...head, note }, opts) };
      } catch (err) {
        return {
          w,
          r: { kind: 'failed', reason: `could not submit: ${String((err as Error)?.message ?? err).slice(0, 300)}` } as Confirmation,
        };
      }
    }),
  );
  type Adverse = { w: WitnessConfig; r: Extract<Confirmation, { kind: 'ahead' | 'inconsistent' }> };
  let adverse = results.filter((x): x is Adverse => x.r.kind === 'ahead' || x.r.kind === 'inconsistent');
  if (head.size > 0 && adverse.length >= quorum) {
    const size = await logSize(svc.db);
    // A claim of more than the log holds, made before another instance appended past it, no longer stands.
    const standing = adverse.filter(({ r }) => r.kind === 'inconsistent' || r.size > size);
    if (standing.length >= quorum)
      return {
        outcome: 'behind',
        size,
        witnessed: Math.max(...standing.map(({ r }) => r.size)),
        dissenting: standing.length,
        forked: standing.some(({ r }) => r.kind === 'inconsistent'),
      };
    if (standing.length === 0) return { outcome: 'undecided', reasons: ['the log grew while the witnesses were asked'] };
    adverse = standing;
  }
  // Fewer dissenters than the quorum (or any, on an empty log): a claim, logged and counted.
  for (const { w, r } of adverse)
    opts.log(
      head.size === 0
        ? 'a witness dissents from the empty log: a log at size 0 is never behind, so this stops nothing'
        : `a witness dissents: it claims this database is behind or forked, but fewer than WITNESS_QUORUM (${quorum}) witnesses say so; this alone stops nothing`,
      {
        witness: w.name,
        url: w.url,
        size: head.size,
        claim: r.kind === 'ahead' ? 'larger' : 'inconsistent',
        witnessSize: r.size,
        ...(r.kind === 'inconsistent' ? { reason: r.reason } : {}),
        dissenting: adverse.length,
        quorum,
      },
    );
  svc.anchor.countDissents(adverse.length);
  const larger = adverse.filter(({ r }) => r.kind === 'ahead');
  if (head.size === 0 && larger.length > 0)
    opts.log(
      `${larger.length} witness(es) claim to hold up to ${Math.max(...larger.map(({ r }) => r.size))} entries of this log, but the database is empty: a new log is never behind, so issuance goes on; if this database replaced one that held the log, stop the service and restore that database (docs/operations.md §3)`,
      { witnesses: larger.map(({ w }) => w.name) },
    );
  const cosigned = results.filter(({ r }) => r.kind === 'cosigned').length;
  // An empty log has nothing a witness could hold against it: a witness that refuses a size-0
  // checkpoint (some do) has answered all the same.
  const answered =
    head.size === 0 ? results.filter(({ r }) => r.kind !== 'failed' || !/^no answer/.test(r.reason)).length : cosigned + adverse.length;
  const confirmed =
    head.size === 0 ? answered >= quorum : cosigned >= quorum || (answered >= quorum && cosigned >= witnesses.length - quorum + 1);
  if (confirmed) return { outcome: 'confirmed', size: head.size, witnessed: head.size };
  const reasons = results
    .filter(({ r }) => r.kind === 'failed')
    .map(({ w, r }) => `${w.name}: ${(r as { reason: string }).reason}`)
    .concat(adverse.map(({ w, r }) => `${w.name}: ${r.kind === 'ahead' ? `claims ${r.size} entries` : r.reason}`));
  for (const { w, r } of results)
    if (r.kind === 'failed') opts.log('witness check failed', { witness: w.name, url: w.url, size: head.size, reason: r.reason });
  return { outcome: 'undecided', reasons };
}

/** Which server answers: its start time, address and database. A failover or a restore changes it. */
export async function serverIdentity(svc: Services): Promise<string> {
  const [row] = await svc.db.query<{ id: string }>(
    `SELECT pg_postmaster_start_time()::text || ' ' || coalesce(host(inet_server_addr()), 'local') || ':' ||
            coalesce(inet_server_port()::text, '') || ' ' || current_database() AS id`,
  );
  return row.id;
}

/** Longest wait between rounds while the witnesses do not answer. */
const MAX_CHECK_BACKOFF_MS = 30_000;
/** The wait before the `refusals`-th retry of a refused round: WITNESS_INTERVAL_MS, doubling, at most 60 s. */
export const refusalBackoffMs = (intervalMs: number, refusals: number) =>
  Math.min(MAX_REFUSAL_BACKOFF_MS, intervalMs * 2 ** Math.min(Math.max(refusals - 1, 0), 20));

export interface AnchorChecks {
  /** One step: what the ticker runs every WITNESS_INTERVAL_MS. */
  tick(): Promise<void>;
}

/**
 * The checks the jobs run (docs/operations.md §3): begin() closes the gate (unless best-effort), the
 * first tick asks the witnesses, and later ticks ask again while undecided or behind (doubling
 * waits), after a dissent below the quorum (the gate staying open), and read the server's identity
 * after a connection closed. Waits are measured on the service's clock (svc.nowMs).
 */
export function anchorChecks(svc: Services, opts: CheckOptions & { intervalMs: number }): AnchorChecks {
  const { anchor, db } = svc;
  const now = () => svc.nowMs();
  let identity: string | undefined;
  let failures = 0;
  let refusals = 0;
  let nextAt = 0;
  let identifying: Promise<void> | undefined;
  const epoch = db.connectionEpoch?.bind(db);
  const identify = () =>
    (identifying ??= (async () => {
      const e = epoch?.() ?? 0;
      const id = await serverIdentity(svc);
      if (identity !== undefined && id !== identity && anchor.state() === 'ok') {
        opts.log('the database answers from another server: asking the witnesses before the log grows', { was: identity, now: id });
        anchor.suspect('another-server');
        nextAt = 0;
      }
      identity = id;
      anchor.verifiedAt(e);
    })().finally(() => {
      identifying = undefined;
    }));
  anchor.begin();
  if (epoch) anchor.watch(epoch, identify);
  let running: Promise<void> | undefined;
  return {
    tick() {
      // The first tick runs at once beside the ticker's: never two at a time.
      running ??= step().finally(() => {
        running = undefined;
      });
      return running;
    },
  };
  async function step(): Promise<void> {
    if (!anchor.enabled) return;
    if (anchor.state() === 'ok') {
      if (epoch && anchor.mayAppend() === false && anchor.state() === 'ok') await identify();
      // Open: a round only when a witness dissented below the quorum (the gate stays open meanwhile).
      if (anchor.state() === 'ok' && !anchor.recheckWanted()) return;
    }
    if (now() < nextAt) return;
    const was = anchor.behindState();
    anchor.checkStarted();
    if (epoch) {
      const e = epoch();
      identity = await serverIdentity(svc);
      anchor.verifiedAt(e);
    }
    const r = await checkRound(svc, opts);
    if (r.outcome === 'confirmed') {
      failures = 0;
      refusals = 0;
      nextAt = 0;
      if (was) opts.log('the log is consistent with its witnesses again: issuing proofs', { size: r.size });
      anchor.confirmed(r.size, r.witnessed);
    } else if (r.outcome === 'behind') {
      failures = 0;
      refusals++;
      // Asked again with backoff: a witness that stops lying, or a database restored to the right point, resumes issuance.
      nextAt = now() + refusalBackoffMs(opts.intervalMs, refusals);
      if (!was || was.size !== r.size || was.witnessed !== r.witnessed || was.forked !== r.forked)
        opts.log(
          r.forked
            ? `the log's database is not consistent with its witnesses (${r.dissenting} of them hold a tree of ${r.witnessed} entries this log of ${r.size} does not extend): no proof is issued; restore the database to the point the witnesses hold (docs/operations.md §3)`
            : `the log's database is behind its witnesses (it holds ${r.size} entries, they hold ${r.witnessed}): no proof is issued; restore the database to a later point (docs/operations.md §3)`,
          { size: r.size, witnessed: r.witnessed, dissenting: r.dissenting },
        );
      anchor.behind(r);
    } else {
      failures++;
      nextAt = now() + Math.min(MAX_CHECK_BACKOFF_MS, opts.intervalMs * 2 ** Math.min(failures, 20));
      anchor.undecided(r.reasons);
    }
  }
}
