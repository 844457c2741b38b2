// Closing a matter: the one function every path uses (release, refund, ruling, timeout, retry).
// In the caller's transaction it settles through custody, journals it, and on confirmation writes
// the terminal state, the proof, its pending log leaf, the trail entries and the outbox rows
// together. The leaf gets its index from the log's integrator after the commit (src/tlog/): the
// closing takes no shared lock, and its command returns once the leaf is integrated (bounded).
import type { Queryable, Stmt, Tx } from '../db/types.ts';
import { sequenceLeaf } from '../tlog/sequence.ts';
import { fuse } from '../db/fuse.ts';
import type { CommandDeps } from '../commandDeps.ts';
import { newId } from '../crypto/ids.ts';
import { formatAmount, splitAmount } from '../units/amounts.ts';
import { issuerSigner } from '../proof/keys.ts';
import { extend, type NewEvent } from '@escrow-settlement/protocol/trail/chain';
import { advanceEscrow, type Fee, type Locked } from './escrowRow.ts';
import type { Outcome as ProofOutcome, Proof, Shares } from '../proof/proof.ts';

/** A closing's outcome (an adjustment proof's `refunded-after-release` is never a closing's). */
type Outcome = Exclude<ProofOutcome, 'refunded-after-release'>;
import { signProofOnce } from '../proof/signOnce.ts';
import type { EscrowState } from './states.ts';
import type { RulingOutcome } from '@escrow-settlement/protocol/resources';

export type { RulingOutcome };
export type DecidedBy = 'co-signature' | 'arbiter' | 'timeout';

export interface Ruling {
  outcome: RulingOutcome;
  rationale: string;
  decidedAt: string;
  decidedBy: DecidedBy;
  shares?: Shares;
}

/** What is being closed, journaled with custody so a retry can finish exactly this closing. */
export type Closing =
  | { kind: 'release' }
  /**
   * `void`: the payee's signed void this refund rests on (an x402 facilitator payment, docs/x402.md),
   * recorded whole in escrow.refunded so the bundle can carry it (docs/protocol.md §11.4).
   */
  | { kind: 'refund'; void?: { signer: string; signedAt: string; signature: string } }
  | { kind: 'ruling'; disputeId: string; ruling: Ruling }
  | { kind: 'timeout'; stage: 'deliver' | 'resolve' | 'decide'; disputeId?: string; ruling?: Ruling };

const OUTCOME: Record<RulingOutcome, Outcome> = { release: 'released', refund: 'refunded', split: 'split' };

function outcomeOf(c: Closing): { outcome: Outcome; shares?: Shares } {
  if (c.kind === 'release') return { outcome: 'released' };
  if (c.kind === 'refund') return { outcome: 'refunded' };
  if (c.ruling) return { outcome: OUTCOME[c.ruling.outcome], shares: c.ruling.shares };
  return { outcome: 'refunded' };
}

function finalState(c: Closing): EscrowState {
  if (c.kind === 'release') return 'settled';
  if (c.kind === 'refund') return 'refunded';
  if (c.kind === 'ruling') return 'resolved';
  return c.stage === 'decide' ? 'resolved' : 'refunded';
}

/** The events a confirmed closing emits before proof.issued (docs/protocol.md §7). */
function closingEvents(c: Closing, proofId: string, outcome: Outcome): NewEvent[] {
  const resolved = (disputeId: string, r: Ruling): NewEvent => ({
    event: 'dispute.resolved',
    body: { disputeId, outcome: r.outcome, decidedBy: r.decidedBy, ...(r.shares ? { shares: r.shares } : {}) },
  });
  switch (c.kind) {
    case 'release':
      return [];
    case 'refund':
      return [{ event: 'escrow.refunded', body: { proofId, ...(c.void ? { void: c.void } : {}) } }];
    case 'ruling':
      return [resolved(c.disputeId, c.ruling)];
    case 'timeout':
      return [
        { event: 'escrow.timeout', body: { stage: c.stage, outcome } },
        ...(c.disputeId && c.ruling ? [resolved(c.disputeId, c.ruling)] : []),
      ];
  }
}

/** Where a closing's money goes, in micro-units; the three always sum to the escrow's amount. */
export interface Payouts {
  payee: bigint;
  payer: bigint;
  fee: bigint;
}

/**
 * A closing's payouts (docs/protocol.md §24.1, §24.2): the payee's share is of the delivery's claim
 * when it made one (else of the whole amount): all of it released, floor(claim × payeeBps / 10000)
 * of a split, none of a refund. The fee is floor(share × bps / 10000) of that share; the payer gets
 * everything not paid to the payee or the fee. Rounding is always down, toward the payee's loss.
 */
export function payoutsOf(
  total: bigint,
  outcome: Outcome,
  shares: Shares | undefined,
  claimed: bigint | null = null,
  fee: Fee | null = null,
): Payouts {
  const base = claimed ?? total;
  const share = outcome === 'released' ? base : outcome === 'split' ? splitAmount(base, shares!.payeeBps).payee : 0n;
  const feeAmount = fee && share > 0n ? (share * BigInt(fee.bps)) / 10_000n : 0n;
  return { payee: share - feeAmount, payer: total - share, fee: feeAmount };
}

/** The whole-amount payouts without a claim or a fee (kept for callers that need only payer and payee). */
export function amountsOf(total: bigint, outcome: Outcome, shares?: Shares): { payer: bigint; payee: bigint } {
  const p = payoutsOf(total, outcome, shares);
  return { payer: p.payer, payee: p.payee };
}

export interface CloseInput {
  e: Locked;
  closing: Closing;
  /** Events this command appends before the closing (delivery.submitted, verdict.passed …). */
  pending?: NewEvent[];
  /** State the escrow keeps if custody fails (default: unchanged; the deadline is cleared either way). */
  ifFailedState?: EscrowState;
  /** The escrow's verdict column after this command (default: unchanged). */
  verdict?: Locked['verdict'];
  /** Statements the command writes either way (its delivery, verdict …), before the closing's. */
  writes?: Stmt[];
  /**
   * The closing's batch is its transaction's last: it goes with COMMIT (Tx.commitWith, one round
   * trip fewer). Only for a caller that sends nothing after closeMatter, outside any savepoint.
   */
  last?: boolean;
  /**
   * This closing's proof, signed ahead by presignClosing (a sweep pass signs the next closing while
   * this one's statements travel). Only for simulated custody, whose proofs hold nothing custody says.
   */
  signed?: Signed;
  /** The escrow's fee was chosen by this command (a delivery's `fee`): written with the closing's row update. */
  setFee?: boolean;
  /** Runs once the closing's statements are on their way, before their answer is awaited. */
  whileWriting?: () => Promise<void>;
}

export type CloseResult = { ok: true; proof: Proof; state: EscrowState } | { ok: false; error: string; attempt: number };

export interface Signed {
  proofId: string;
  proof: Proof;
  /** What the closing appends to the trail: the command's pending events, the closing's, proof.issued. */
  entries: ReturnType<typeof extend>;
  leafHashHex: string;
  /** JCS of the signed proof: what is stored (src/proof/signOnce.ts). */
  jcs: string;
  disputeId?: string;
}

/** Resolves once the statements issued on tx are on their way (Tx.sent); a plain Queryable: at once. */
const sent = (tx: Queryable) => ('sent' in tx ? (tx as Tx).sent() : Promise.resolve());

/**
 * A timeout or other closing's proof signed ahead of closeMatter (pass it as `signed`), or
 * undefined where custody puts something of its own into the proof (chain custody's anchor).
 * The signature is spent if custody then fails: the proof is dropped, never stored.
 */
export async function presignClosing(
  tx: Queryable,
  svc: CommandDeps,
  e: Locked,
  closing: Closing,
  pending: NewEvent[] = [],
): Promise<Signed | undefined> {
  if (svc.custody.kind !== 'simulated') return undefined;
  const { outcome, shares } = outcomeOf(closing);
  return signClosing(tx, e, closing, pending, { outcome, shares, at: e.now.toISOString() });
}

/**
 * Until when a closing that pays the payee accepts refunds after release (docs/protocol.md §24.4):
 * its issuedAt plus the escrow's refundWithinSeconds (the default for escrows created without it),
 * and never after the escrow's absolute bound (an x402 payer's refundDeadline, docs/x402.md); null
 * when the payee gets nothing or the window is 0.
 */
export function refundDeadlineOf(e: Locked, payouts: Payouts, at: Date): Date | null {
  const window = e.timeouts.refundWithinSeconds ?? 2_592_000;
  if (payouts.payee <= 0n || window <= 0) return null;
  const end = at.getTime() + window * 1000;
  return new Date(e.refundBy && e.refundBy.getTime() < end ? e.refundBy.getTime() : end);
}

/** The proof of a confirmed closing, signed, its leaf hash, and the trail entries the closing appends. */
async function signClosing(
  tx: Queryable,
  e: Locked,
  closing: Closing,
  pending: NewEvent[],
  o: { outcome: Outcome; shares?: Shares; at: string; anchor?: Proof['anchor'] },
): Promise<Signed> {
  const proofId = newId('prf');
  const before = extend(e.trailLength, e.trailHead, [...pending, ...closingEvents(closing, proofId, o.outcome)], o.at);
  const head = before.length ? before[before.length - 1] : { index: e.trailLength - 1, hash: e.trailHead };
  const key = await issuerSigner(tx, e.issuerKeyId);
  const disputeId = closing.kind === 'ruling' || closing.kind === 'timeout' ? closing.disputeId : undefined;
  const payouts = payoutsOf(e.amount, o.outcome, o.shares, e.deliveryAmount, e.fee);
  const refundDeadline = refundDeadlineOf(e, payouts, new Date(o.at));
  const { proof, jcs, leafHashHex } = signProofOnce(
    {
      id: proofId,
      escrowId: e.id,
      outcome: o.outcome,
      payer: e.payer.publicKey,
      payee: e.payee.publicKey,
      amount: formatAmount(e.amount),
      asset: e.asset,
      termsHash: e.termsHash,
      ...(e.deliveryHash ? { deliveryHash: e.deliveryHash } : {}),
      ...(e.verdictId ? { verdictId: e.verdictId } : {}),
      ...((disputeId ?? e.disputeId) ? { disputeId: disputeId ?? e.disputeId! } : {}),
      ...(e.mandateHash ? { mandateHash: e.mandateHash } : {}),
      ...(o.shares ? { shares: o.shares } : {}),
      // Money after the verdict (docs/protocol.md §24.1, §24.2): the claim a partial capture released, the fee, every leg.
      ...(e.deliveryAmount !== null && o.outcome !== 'refunded' ? { captured: formatAmount(e.deliveryAmount) } : {}),
      ...(e.fee ? { fee: { bps: e.fee.bps, recipient: e.fee.recipient, amount: formatAmount(payouts.fee) } } : {}),
      payouts: { payee: formatAmount(payouts.payee), payer: formatAmount(payouts.payer), fee: formatAmount(payouts.fee) },
      // Chain-backed custody: where the payout happened, inside the signed body (docs/protocol.md §11.1, §21).
      ...(o.anchor ? { anchor: o.anchor } : {}),
      trailHead: head.hash,
      trailLength: head.index + 1,
      issuedAt: o.at,
    },
    key,
  );
  const entries = [
    ...before,
    ...extend(
      head.index + 1,
      head.hash,
      [
        {
          event: 'proof.issued',
          body: { proofId, outcome: o.outcome, ...(refundDeadline ? { refundDeadline: refundDeadline.toISOString() } : {}) },
        },
      ],
      o.at,
    ),
  ];
  return { proofId, proof, entries, leafHashHex, jcs, disputeId };
}

export async function closeMatter(tx: Queryable, svc: CommandDeps, input: CloseInput): Promise<CloseResult> {
  const { e, closing } = input;
  // Before custody moves anything and before a leaf is written: a log whose database is behind its
  // witnesses issues nothing (docs/operations.md §3); the refusal rolls the command back whole.
  await svc.proofLog.gate.beforeAppend();
  const pending = input.pending ?? [];
  const now = e.now;
  const at = now.toISOString();
  const { outcome, shares } = outcomeOf(closing);
  const amounts = payoutsOf(e.amount, outcome, shares, e.deliveryAmount, e.fee);
  const refundDeadline = refundDeadlineOf(e, amounts, now);
  const reference = `cst_${e.id.slice(4)}`;
  // Every write of the closing, and the command's own before it, as one statement (src/db/fuse.ts).
  const write = (stmts: Stmt[]) => {
    const one = [fuse(stmts)];
    return input.last && 'commitWith' in tx ? (tx as Tx).commitWith(one) : tx.batch(one);
  };
  const attempt = e.custodyAttempts + 1;
  // Custody runs inside this transaction, before anything is written. An adapter that moves real
  // value outside the database (src/custody/chainCustody.ts) can succeed while this transaction
  // later rolls back, losing the journal; such an adapter must find its own earlier payout again
  // from a key derived from the escrow id (not from this journal) and confirm it instead of paying twice.
  const settling = svc.custody.settle(tx, {
    escrowId: e.id,
    reference,
    outcome,
    payerAmount: amounts.payer,
    payeeAmount: amounts.payee,
    ...(amounts.fee > 0n ? { feeAmount: amounts.fee, feeRecipient: e.fee!.recipient } : {}),
    asset: e.asset,
    faultPending: e.faultPending,
  });
  // Simulated custody puts nothing of its own into the proof (chain custody's anchor is known only
  // once it has settled), so its proof is signed before custody answers. With a sandbox fault
  // pending, custody's statement is in flight and the Ed25519 signature, the largest CPU cost of a
  // closing, overlaps that round trip; with none, custody sent nothing and there is nothing to wait
  // for (Tx.sent() would only let the event loop turn twice). If custody fails the signed proof is
  // dropped, never stored.
  let early = input.signed;
  if (!early && svc.custody.kind === 'simulated') {
    settling.catch(() => {}); // awaited below; a rejection meanwhile is not an unhandled one
    if (e.faultPending) await sent(tx);
    early = await signClosing(tx, e, closing, pending, { outcome, shares, at });
  }
  const settled = await settling;
  const journal = (status: string, lastError: string | null): Stmt => ({
    // A retry keeps the first attempt's outcome, amounts, reference and closing: the intent is fixed.
    text: `INSERT INTO custody (escrow_id, status, outcome, payer_amount, payee_amount, attempts, last_error, reference, closing, created_at, updated_at${
      amounts.fee > 0n ? ', fee_amount, fee_recipient' : ''
    })
           VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8, $9, $9${amounts.fee > 0n ? ', $10, $11' : ''})
           ON CONFLICT (escrow_id) DO UPDATE SET status = EXCLUDED.status, attempts = custody.attempts + 1,
             last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at`,
    params: [
      e.id,
      status,
      outcome,
      amounts.payer.toString(),
      amounts.payee.toString(),
      lastError,
      reference,
      JSON.stringify(closing),
      now,
      ...(amounts.fee > 0n ? [amounts.fee.toString(), e.fee!.recipient] : []),
    ],
  });

  if (!settled.ok) {
    const entries = extend(
      e.trailLength,
      e.trailHead,
      [...pending, { event: 'custody.failed', body: { attempt, error: settled.error } }],
      at,
    );
    await write([
      ...(input.writes ?? []),
      journal('settle-failed', settled.error),
      ...advanceEscrow(e, entries, {
        state: input.ifFailedState,
        deadlineAt: null,
        custodyStatus: 'settle-failed',
        verdict: input.verdict,
        ...(input.setFee && e.fee ? { fee: e.fee } : {}),
      }),
    ]);
    return { ok: false, error: settled.error, attempt };
  }

  const { proofId, proof, entries, leafHashHex, jcs, disputeId } =
    early ?? (await signClosing(tx, e, closing, pending, { outcome, shares, at, anchor: settled.anchor }));
  const state = finalState(closing);
  const ruling = closing.kind === 'ruling' ? closing.ruling : closing.kind === 'timeout' ? closing.ruling : undefined;
  const written = write([
    ...(input.writes ?? []),
    journal('confirmed', null),
    ...advanceEscrow(e, entries, {
      state,
      deadlineAt: null,
      custodyStatus: 'settled',
      verdict: input.verdict,
      ...(refundDeadline ? { refundDeadline } : {}),
      ...(input.setFee && e.fee ? { fee: e.fee } : {}),
    }),
    {
      text: 'INSERT INTO proofs (id, escrow_id, leaf_index, leaf_hash, doc, issued_at) VALUES ($1, $2, NULL, $3, $4, $5)',
      params: [proofId, e.id, leafHashHex, jcs, now],
    },
    // Sequenced, not yet indexed: every proof is in log_pending or in the log, never both, never neither.
    sequenceLeaf(proofId, leafHashHex),
    ...(e.mandateId && amounts.payer > 0n
      ? [{ text: 'UPDATE mandates SET spent = spent - $2 WHERE id = $1', params: [e.mandateId, amounts.payer.toString()] }]
      : []),
    // An AP2 escrow (a mandateHash without a mandateId): what returns to the payer goes back to its open mandate's budget (docs/ap2.md §5).
    ...(!e.mandateId && e.mandateHash && amounts.payer > 0n
      ? [
          {
            text: 'UPDATE ap2_mandates m SET spent = m.spent - $2 FROM ap2_escrows a WHERE a.escrow_id = $1 AND m.budget_key = a.budget_key',
            params: [e.id, amounts.payer.toString()],
          },
        ]
      : []),
    ...(disputeId && ruling
      ? [{ text: `UPDATE disputes SET state = 'resolved', ruling = $2 WHERE id = $1`, params: [disputeId, JSON.stringify(ruling)] }]
      : []),
  ]);
  if (input.whileWriting) {
    written.catch(() => {}); // awaited below
    await sent(tx);
    await input.whileWriting();
  }
  await written;
  // After the commit: wake this instance's integrator and wait (LOG_INTEGRATE_WAIT_MS at most) until
  // the leaf has its index, so GET /v1/log/proof/{id} answers as soon as the command has returned.
  if (tx.afterCommit) tx.afterCommit(() => svc.proofLog.settled([{ entryId: proofId, leafHash: leafHashHex }]));
  return { ok: true, proof, state };
}
