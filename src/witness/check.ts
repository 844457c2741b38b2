// Asking the witnesses before appending (docs/operations.md §3): the database's newest checkpoint
// goes to every witness, whatever the database says it last sent them (the database is what may
// have been rolled back), and their answers move the anchor (src/tlog/anchor.ts): the quorum's
// cosignatures open the gate; a witness holding a larger tree, or finding ours inconsistent, stops
// issuance. A checkpoint is sent only when it may be consistent with what the witnesses hold: never
// one smaller than a size a witness already named, never one a witness already refused.
import type { Services } from '../services.ts';
import { consistencyBetween, logSize, rootAt } from '../tlog/store.ts';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { issuerNoteAt } from './note.ts';
import { addCheckpointBody, interpretAnswer } from './protocol.ts';
import { DEFAULT_TIMEOUT_MS, exchange } from './submitter.ts';
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

/** What a round found: the gate's new state, or nothing decided (a witness did not answer). */
export type RoundResult =
  | { outcome: 'confirmed'; size: number; witnessed: number }
  | { outcome: 'behind'; size: number; witnessed: number; refused?: { size: number; rootHash: string } }
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
 * One round: the newest checkpoint to every witness, then what their answers mean. A witness holding
 * more is believed only if the database, read again after the answer, still holds less (another
 * instance may have grown the log meanwhile).
 */
export async function checkRound(svc: Services, opts: CheckOptions): Promise<RoundResult> {
  const { witnesses, witnessQuorum, logOrigin } = svc.config;
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
  const adverse = results.filter(({ r }) => r.kind === 'ahead' || r.kind === 'inconsistent');
  if (adverse.length > 0) {
    const size = await logSize(svc.db);
    const witnessed = Math.max(...adverse.map(({ r }) => (r as { size: number }).size));
    const inconsistent = adverse.some(({ r }) => r.kind === 'inconsistent');
    // Only "ahead" answers, and the log has grown past them since: another instance appended; ask again.
    if (!inconsistent && size >= witnessed) return { outcome: 'undecided', reasons: ['the log grew while the witnesses were asked'] };
    return {
      outcome: 'behind',
      size,
      witnessed,
      ...(inconsistent ? { refused: { size: head.size, rootHash: await rootAt(svc.db, head.size) } } : {}),
    };
  }
  const cosigned = results.filter(({ r }) => r.kind === 'cosigned').length;
  // An empty log has nothing a witness could hold against it: a witness that refuses a size-0
  // checkpoint (some do) has answered all the same. Only a 409 naming a larger size (above) counts.
  const answered =
    head.size === 0
      ? results.filter(({ r }) => r.kind === 'cosigned' || !/^no answer/.test((r as { reason?: string }).reason ?? '')).length
      : cosigned;
  if (answered >= witnessQuorum) return { outcome: 'confirmed', size: head.size, witnessed: head.size };
  const reasons = results.filter(({ r }) => r.kind === 'failed').map(({ w, r }) => `${w.name}: ${(r as { reason: string }).reason}`);
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

/** How long the behind state waits between looks at the database (has it been restored to a later point?). */
export const BEHIND_RECHECK_MS = 5_000;
/** Longest wait between rounds while the witnesses do not answer. */
const MAX_CHECK_BACKOFF_MS = 30_000;

export interface AnchorChecks {
  /** One step: what the ticker runs every WITNESS_INTERVAL_MS. */
  tick(): Promise<void>;
}

/**
 * The checks the jobs run (docs/operations.md §3): begin() closes the gate (unless best-effort), the
 * first tick asks the witnesses, and later ticks ask again while undecided (doubling waits), look
 * at a database that is behind until it holds enough to ask again, and read the server's identity
 * after a connection closed.
 */
export function anchorChecks(svc: Services, opts: CheckOptions & { intervalMs: number; behindRecheckMs?: number }): AnchorChecks {
  const { anchor, db } = svc;
  let identity: string | undefined;
  let failures = 0;
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
    {
      if (!anchor.enabled) return;
      if (anchor.state() === 'ok') {
        if (epoch && anchor.mayAppend() === false && anchor.state() === 'ok') await identify();
        if (anchor.state() === 'ok') return;
      }
      if (Date.now() < nextAt) return;
      const was = anchor.behindState();
      if (was) {
        // Nothing is sent until the database could be consistent with what the witnesses hold:
        // at least as large, and not the very head a witness already refused.
        const size = await logSize(db);
        const same = was.refused && size === was.refused.size && (await rootAt(db, size)) === was.refused.rootHash;
        if (size < was.witnessed || same) {
          nextAt = Date.now() + (opts.behindRecheckMs ?? BEHIND_RECHECK_MS);
          return;
        }
      }
      if (epoch) {
        const e = epoch();
        identity = await serverIdentity(svc);
        anchor.verifiedAt(e);
      }
      const r = await checkRound(svc, opts);
      if (r.outcome === 'confirmed') {
        failures = 0;
        if (was) opts.log('the log is consistent with its witnesses again: issuing proofs', { size: r.size });
        anchor.confirmed(r.size, r.witnessed);
      } else if (r.outcome === 'behind') {
        failures = 0;
        nextAt = Date.now() + (opts.behindRecheckMs ?? BEHIND_RECHECK_MS);
        if (!was || was.size !== r.size || was.witnessed !== r.witnessed)
          opts.log(
            `the log's database is behind its witnesses (it holds ${r.size} entries, they hold ${r.witnessed}): no proof is issued; restore the database to a later point (docs/operations.md §3)`,
            { size: r.size, witnessed: r.witnessed },
          );
        anchor.behind(r);
      } else {
        failures++;
        nextAt = Date.now() + Math.min(MAX_CHECK_BACKOFF_MS, opts.intervalMs * 2 ** Math.min(failures, 20));
      }
    }
  }
}
