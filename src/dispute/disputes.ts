// Disputes: opened by a party after a failed verdict, evidence by content hash, closed only by a
// co-signed or arbiter-signed ruling, or by the decide deadline (docs/protocol.md §4.2, §6).
import type { CommandDeps } from '../commandDeps.ts';
import type { Queryable } from '../db/types.ts';
import { newId } from '../crypto/ids.ts';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';

import { signJson, verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { AppError, invalidState, notFound } from '../errors.ts';
import { extend } from '@escrow-settlement/protocol/trail/chain';
import { advanceEscrow, lockEscrow, type Locked } from '../escrow/escrowRow.ts';
import { transition } from '../escrow/states.ts';
import { fuse } from '../db/fuse.ts';
import { actingParty, assertFresh, partyActHash, recordSigned, signedActionHash } from './parties.ts';
import type { PartyAct } from '../escrow/partySignatures.ts';
import { idemClaim, idemStore, type IdemSlot } from '../db/idempotency.ts';
import { canonicalPayload } from '../escrow/deliver.ts';
import { closeMatter, type Ruling, type RulingOutcome } from '../escrow/close.ts';
import { loadAgents } from '../access/agents.ts';
import { custodyFailed } from '../escrow/refund.ts';
import { partySignatureWrite, signedAct, type PartySignatureRow } from '../escrow/partySignatures.ts';
import type { Proof, Shares } from '../proof/proof.ts';
import type { ResolveInput } from '@escrow-settlement/protocol/resources';

export interface Evidence {
  party: string;
  contentHash: string;
  note: string;
  submittedAt: string;
}

export interface DisputeJson {
  id: string;
  escrowId: string;
  state: 'open' | 'under-review' | 'resolved';
  openedBy: string;
  reason: string;
  evidence: Evidence[];
  ruling?: Ruling;
  openedAt: string;
}

type Row = {
  id: string;
  escrow_id: string;
  state: DisputeJson['state'];
  opened_by: string;
  reason: string;
  evidence: string;
  ruling: string | null;
  opened_at: string;
};

const toJson = (r: Row): DisputeJson => ({
  id: r.id,
  escrowId: r.escrow_id,
  state: r.state,
  openedBy: r.opened_by,
  reason: r.reason,
  evidence: JSON.parse(r.evidence),
  ...(r.ruling ? { ruling: JSON.parse(r.ruling) } : {}),
  openedAt: r.opened_at,
});

async function disputeOf(q: Queryable, escrowId: string, lock = false): Promise<Row> {
  // Under the escrow's row lock already; FOR UPDATE here only documents that this row changes too.
  const rows = await q.query<Row>(`SELECT * FROM disputes WHERE escrow_id = $1${lock ? ' FOR UPDATE' : ''}`, [escrowId]);
  if (rows.length === 0) throw notFound(`escrow ${escrowId} has no dispute`);
  return rows[0];
}

export async function getDispute(svc: CommandDeps, escrowId: string): Promise<DisputeJson> {
  const [e] = await svc.db.query('SELECT id FROM escrows WHERE id = $1', [escrowId]);
  if (!e) throw notFound(`no escrow ${escrowId}`);
  return toJson(await disputeOf(svc.db, escrowId));
}

export async function openDispute(
  svc: CommandDeps,
  escrowId: string,
  act: PartyAct,
  reason: string,
  idem?: IdemSlot,
): Promise<DisputeJson> {
  const signedFields = act.form === 'client' && reason !== '' ? { reason } : {};
  const actionHash = partyActHash(escrowId, act, 'dispute.open', signedFields);
  return svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const e = await lockEscrow(tx, escrowId);
    await assertFresh(tx, [actionHash], 'dispute opening');
    if (e.disputeId) throw invalidState('this escrow already has a dispute; an escrow has at most one');
    transition('dispute', e);
    const openedBy = await actingParty(tx, e, act, 'dispute.open', signedFields);
    const at = e.now.toISOString();
    const d: DisputeJson = { id: newId('dsp'), escrowId, state: 'open', openedBy, reason, evidence: [], openedAt: at };
    const entries = extend(e.trailLength, e.trailHead, [{ event: 'dispute.opened', body: { disputeId: d.id, openedBy, reason } }], at);
    const deadlineAt = new Date(e.now.getTime() + e.timeouts.decideWithinSeconds * 1000);
    // The bundle keeps the opening as signed: a sandbox agent's held key signs the reason too (docs/protocol.md §11.4).
    const signed = await signedAct(tx, escrowId, act, 'dispute.open', reason !== '' ? { reason } : {}, openedBy, at, entries[0].index);
    await tx.batch([
      fuse([
        {
          text: `INSERT INTO disputes (id, escrow_id, state, opened_by, reason, opened_at) VALUES ($1, $2, 'open', $3, $4, $5)`,
          params: [d.id, escrowId, openedBy, reason, at],
        },
        ...advanceEscrow(e, entries, { state: 'disputed', deadlineAt }),
        partySignatureWrite(escrowId, [signed]),
        ...recordSigned(escrowId, [actionHash]),
        ...idemStore(idem, 201, d),
      ]),
    ]);
    return d;
  });
}

export async function addEvidence(
  svc: CommandDeps,
  escrowId: string,
  act: PartyAct,
  note: string | undefined,
  payload: unknown,
  hasPayload: boolean,
  idem?: IdemSlot,
): Promise<DisputeJson> {
  const contentHash = sha256Hex(hasPayload ? canonicalPayload(payload) : canonicalPayload(note ?? ''));
  const fields: Record<string, unknown> = {};
  if (note !== undefined) fields.note = note;
  if (hasPayload) fields.contentHash = contentHash;
  const actionHash = partyActHash(escrowId, act, 'dispute.evidence', fields);
  return svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const e = await lockEscrow(tx, escrowId);
    const d = await disputeOf(tx, escrowId, true);
    await assertFresh(tx, [actionHash], 'evidence');
    if (d.state === 'resolved') throw invalidState('the dispute is resolved; evidence is closed');
    transition('evidence', e);
    const party = await actingParty(tx, e, act, 'dispute.evidence', act.form === 'client' ? fields : {});
    const at = e.now.toISOString();
    const evidence: Evidence[] = [...JSON.parse(d.evidence), { party, contentHash, note: note ?? '', submittedAt: at }];
    // The counterparty's first evidence moves the dispute under review (docs/protocol.md §4.2).
    const state = d.state === 'open' && party !== d.opened_by ? 'under-review' : d.state;
    const entries = extend(e.trailLength, e.trailHead, [{ event: 'dispute.evidence', body: { disputeId: d.id, party, contentHash } }], at);
    const signed = await signedAct(tx, escrowId, act, 'dispute.evidence', fields, party, at, entries[0].index);
    const out = toJson({ ...d, state, evidence: JSON.stringify(evidence) });
    await tx.batch([
      fuse([
        { text: 'UPDATE disputes SET state = $2, evidence = $3 WHERE id = $1', params: [d.id, state, JSON.stringify(evidence)] },
        ...advanceEscrow(e, entries, {}),
        partySignatureWrite(escrowId, [signed]),
        ...recordSigned(escrowId, [actionHash]),
        ...idemStore(idem, 200, out),
      ]),
    ]);
    return out;
  });
}

export type { ResolveInput };

const rulingError = (m: string) => new AppError('unauthorized_ruling', m);

/**
 * Split shares: required on a split, refused otherwise, integers summing to 10000 (docs/protocol.md §6.3).
 * A ruling whose shares are malformed, missing or unasked-for is not a ruling the service may record:
 * 403 `unauthorized_ruling`, the message naming the field (`shares.payeeBps: …`).
 */
export function checkShares(outcome: RulingOutcome, shares: unknown): Shares | undefined {
  if (outcome !== 'split') {
    if (shares !== undefined) throw rulingError(`shares: only allowed on a split ruling (outcome is ${outcome})`);
    return undefined;
  }
  const s = shares as Record<string, unknown> | undefined;
  if (!s || typeof s !== 'object' || Array.isArray(s)) throw rulingError('shares: required on a split ruling, as {payerBps, payeeBps}');
  const extra = Object.keys(s).find((k) => k !== 'payerBps' && k !== 'payeeBps');
  if (extra) throw rulingError(`shares.${extra}: not a known field (shares are {payerBps, payeeBps})`);
  for (const k of ['payerBps', 'payeeBps'] as const) {
    const v = s[k];
    if (v === undefined) throw rulingError(`shares.${k}: required on a split ruling, an integer from 0 to 10000`);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 10000)
      throw rulingError(`shares.${k}: must be an integer from 0 to 10000`);
  }
  if ((s.payerBps as number) + (s.payeeBps as number) !== 10000) throw rulingError('shares: payerBps + payeeBps must equal 10000');
  return { payerBps: s.payerBps as number, payeeBps: s.payeeBps as number };
}

/** The body both parties (or the arbiter) sign (docs/protocol.md §6.3). */
export const rulingBody = (escrowId: string, disputeId: string, outcome: RulingOutcome, rationale: string, shares?: Shares) => ({
  escrowId,
  disputeId,
  outcome,
  rationale,
  ...(shares ? { shares } : {}),
});

function decidedBy(e: Locked, signers: Set<string>): Ruling['decidedBy'] {
  if (signers.has(e.payer.publicKey) && signers.has(e.payee.publicKey)) return 'co-signature';
  if (e.arbiter && signers.has(e.arbiter.publicKey)) return 'arbiter';
  const missing = e.arbiter
    ? 'signatures of both payer and payee, or of the named arbiter'
    : 'signatures of both payer and payee (no arbiter was named)';
  throw rulingError(`the ruling lacks the required signatures: it needs ${missing}`);
}

export async function resolveDispute(
  svc: CommandDeps,
  escrowId: string,
  input: ResolveInput,
  idem?: IdemSlot,
): Promise<{ dispute: DisputeJson; proof: Proof }> {
  const shares = checkShares(input.outcome, input.shares);
  const rationale = input.rationale ?? '';
  const held = await loadAgents(svc.db, input.agentIds ?? [], 'agentIds');
  const r = await svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const e = await lockEscrow(tx, escrowId);
    const d = await disputeOf(tx, escrowId, true);
    const signed = rulingBody(escrowId, d.id, input.outcome, rationale, shares);
    const hashes = (input.signatures ?? []).map((s) => signedActionHash(s.signer, signed));
    // A ruling whose every client signature was already accepted is that ruling sent again.
    if (hashes.length > 0) await assertFreshAll(tx, hashes);
    if (d.state === 'resolved') throw invalidState('the dispute is already resolved');
    transition('resolve', e);
    const signedBody = signed;
    const body = canonicalBytes(signedBody);
    const signers = new Set<string>();
    const sigs = new Map<string, string>();
    (input.signatures ?? []).forEach((s, i) => {
      if (!verifyHex(s.signature, body, s.signer))
        throw rulingError(`signatures[${i}] does not verify over JCS {escrowId, disputeId, outcome, rationale${shares ? ', shares' : ''}}`);
      signers.add(s.signer);
      sigs.set(s.signer, s.signature);
    });
    // agentIds: the service signs the same body with each held key (docs/protocol.md §6.3); it only counts
    // toward the ruling if it is the payer, payee or arbiter (decidedBy).
    for (const a of held) {
      signers.add(a.publicKey);
      if (!sigs.has(a.publicKey)) sigs.set(a.publicKey, signJson(signedBody, a.secretKey));
    }
    const ruling: Ruling = {
      outcome: input.outcome,
      rationale,
      decidedAt: e.now.toISOString(),
      decidedBy: decidedBy(e, signers),
      ...(shares ? { shares } : {}),
    };
    // The signatures of the parties and arbiter the ruling rests on, kept for the bundle (docs/protocol.md §11.4).
    const roles = new Set([e.payer.publicKey, e.payee.publicKey, ...(e.arbiter ? [e.arbiter.publicKey] : [])]);
    const kept: PartySignatureRow[] = [...sigs]
      .filter(([k]) => roles.has(k))
      .map(([publicKey, signature]) => ({ kind: 'ruling', trailIndex: null, publicKey, signedBody, signature }));
    const closed = await closeMatter(tx, svc, {
      e,
      closing: { kind: 'ruling', disputeId: d.id, ruling },
      writes: [partySignatureWrite(escrowId, kept)],
    });
    if (closed.ok) {
      const answer = { dispute: toJson({ ...d, state: 'resolved', ruling: JSON.stringify(ruling) }), proof: closed.proof };
      const rest = [...recordSigned(escrowId, hashes), ...idemStore(idem, 200, answer)];
      if (rest.length) await tx.batch([fuse(rest)]);
    }
    return { closed, d };
  });
  if (!r.closed.ok) throw custodyFailed(r.closed);
  const dispute = toJson((await svc.db.query<Row>('SELECT * FROM disputes WHERE id = $1', [r.d.id]))[0]);
  return { dispute, proof: r.closed.proof };
}

/** 409 `replayed` when every one of a ruling's signatures was accepted before (a partial overlap is a new ruling). */
async function assertFreshAll(tx: Queryable, hashes: string[]): Promise<void> {
  const seen = await tx.query<{ n: string }>('SELECT count(*)::text AS n FROM signed_actions WHERE action_hash = ANY($1::text[])', [
    [...new Set(hashes)],
  ]);
  if (Number(seen[0].n) === new Set(hashes).size) await assertFresh(tx, hashes, 'ruling');
}
