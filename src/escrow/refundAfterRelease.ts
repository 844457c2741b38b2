// Refunds after release and refund requests (docs/protocol.md §24.4-§24.6): money back from the payee
// to the payer after a closing paid the payee, signed by the payee or the arbiter, within the refund
// window, never more than the payee's net payout; each one an adjustment proof and a leaf of the log.
import { commandTx } from './deps.ts';
import { refundRequestSigningBody, refundSigningBody } from '../proof/signedBodies.ts';
import type { CommandDeps } from '../commandDeps.ts';
import type { Queryable, Stmt } from '../db/types.ts';
import { newId } from '../crypto/ids.ts';
import { AppError, invalidState, notFound, unprocessable } from '../errors.ts';
import { extend } from '@escrow-settlement/protocol/trail/chain';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { signJson, verifyJson } from '@escrow-settlement/protocol/crypto/ed25519';
import { advanceEscrow, lockEscrowWith, type Locked } from './escrowRow.ts';
import { formatAmount } from '../units/amounts.ts';
import { issuerSigner } from '../proof/keys.ts';
import { signProofOnce } from '../proof/signOnce.ts';
import { sequenceLeaf } from '../tlog/sequence.ts';
import { fuse } from '../db/fuse.ts';
import { idemClaim, idemStore, type IdemSlot } from '../db/idempotency.ts';
import { MAX_SKEW_MS } from './deliver.ts';
import type { Proof } from '../proof/proof.ts';

/**
 * Who signs: a held sandbox agent (the service signs the body with its key, at the service clock),
 * or the party itself over JCS {escrowId, action, amount, reason, signedAt}.
 */
export type MoneyAct =
  | { form: 'sandbox'; agentId: string }
  | { form: 'client'; signedAt: string; signature: { signer: string; signature: string } };

export interface RefundInput {
  /** Micro-units, > 0. */
  amount: bigint;
  /** "" when none was given. */
  reason: string;
  act: MoneyAct;
}

export interface RefundView {
  id: string;
  amount: string;
  reason: string;
  by: string;
  at: string;
}

export interface RefundResult {
  refund: RefundView;
  proof: Proof;
}

export { refundRequestSigningBody, refundSigningBody } from '../proof/signedBodies.ts';

const forbidden = (message: string) => new AppError('unauthorized_ruling', message);

/**
 * The signer's key, the signedAt and the signature of an act, checked: a sandbox agent must be one of
 * `allowed` (its held key signs at the service clock); a client signer must be one of `allowed`, its
 * signedAt within 300 s of the service clock, its signature valid over `body(signedAt)`.
 */
function signed(
  e: Locked,
  act: MoneyAct,
  agent: { publicKey: string; secretKey: string } | null,
  allowed: Array<[string, string | undefined]>,
  body: (signedAt: string) => unknown,
  what: string,
): { signer: string; signedAt: string; signature: string; signedBody: unknown } {
  const keys = allowed.filter(([, k]) => k !== undefined).map(([, k]) => k!);
  const roles = allowed.map(([r]) => r).join(' or ');
  if (act.form === 'sandbox') {
    if (!agent) throw notFound(`agentId: no agent ${act.agentId}`);
    if (!keys.includes(agent.publicKey)) throw forbidden(`agentId: agent ${act.agentId} is not this escrow's ${roles}`);
    const signedAt = e.now.toISOString();
    const signedBody = body(signedAt);
    return { signer: agent.publicKey, signedAt, signature: signJson(signedBody, fromHex(agent.secretKey, 'secret_key')), signedBody };
  }
  const { signer, signature } = act.signature;
  if (!keys.includes(signer)) throw forbidden(`signature.signer is not this escrow's ${roles}`);
  const skew = Math.abs(Date.parse(act.signedAt) - e.now.getTime());
  if (skew > MAX_SKEW_MS) throw unprocessable(`signedAt is ${Math.round(skew / 1000)} s from the service clock; at most 300 s is accepted`);
  const signedBody = body(act.signedAt);
  if (!verifyJson(signedBody, signature, signer)) throw forbidden(`signature.signature does not verify over JCS ${what} with ${signer}`);
  return { signer, signedAt: act.signedAt, signature, signedBody };
}

type Prior = { id: string; amount: string; reason: string; signer: string; created_at: Date; doc?: string };

/** The closing proof and an earlier act with the same (signer, signedAt, amount), read in one statement. */
async function closingAndPrior(
  tx: Queryable,
  table: 'refunds' | 'refund_requests',
  escrowId: string,
  signer: string,
  signedAt: string,
  amount: bigint,
): Promise<{ closing: Proof | null; prior: Prior | null }> {
  const [row] = await tx.query<{ closing: string | null; prior: string | null }>(
    `SELECT (SELECT doc FROM proofs WHERE escrow_id = $1 AND adjusts IS NULL) AS closing,
            (SELECT json_build_object('id', r.id, 'amount', r.amount::text, 'reason', r.reason, 'signer', r.signer, 'created_at', r.created_at${
              table === 'refunds' ? `, 'doc', (SELECT doc FROM proofs p WHERE p.id = r.proof_id)` : ''
            })::text
               FROM ${table} r WHERE r.escrow_id = $1 AND r.signer = $2 AND r.signed_at = $3 AND r.amount = $4) AS prior`,
    [escrowId, signer, signedAt, amount.toString()],
  );
  return { closing: row.closing ? JSON.parse(row.closing) : null, prior: row.prior ? JSON.parse(row.prior) : null };
}

const view = (p: Prior): RefundView => ({
  id: p.id,
  amount: formatAmount(BigInt(p.amount)),
  reason: p.reason,
  by: p.signer,
  at: new Date(p.created_at).toISOString(),
});

/** 409 unless the escrow is closed with a payee payout and the service clock is before its refund deadline. */
function inWindow(e: Locked, closing: Proof | null, what: string): { closing: Proof; deadline: Date; payeeNet: bigint } {
  if ((e.state !== 'settled' && e.state !== 'resolved') || !closing)
    throw invalidState(`cannot ${what} an escrow in state ${e.state}: only a settled or resolved escrow that paid the payee`);
  if (!e.refundDeadline)
    throw invalidState(`cannot ${what}: this escrow has no refund window (the payee was paid nothing, or refundWithinSeconds is 0)`);
  if (e.now.getTime() >= e.refundDeadline.getTime())
    throw invalidState(`cannot ${what}: the refund deadline ${e.refundDeadline.toISOString()} has passed`);
  return { closing, deadline: e.refundDeadline, payeeNet: payeeNetOf(closing) };
}

/** The payee's net payout of a closing proof (its `payouts.payee`; proofs before payouts: the payee's whole share, no fee). */
export function payeeNetOf(closing: Proof): bigint {
  if (closing.payouts) return micro(closing.payouts.payee);
  if (closing.outcome === 'released') return micro(closing.amount);
  if (closing.outcome === 'split' && closing.shares) return (micro(closing.amount) * BigInt(closing.shares.payeeBps)) / 10_000n;
  return 0n;
}

function micro(s: string): bigint {
  const [i, f = ''] = s.split('.');
  return BigInt(i) * 1_000_000n + BigInt(f.padEnd(6, '0'));
}

/**
 * A refund after release (docs/protocol.md §24.4): `amount` back from the payee to the payer, signed by
 * the payee or the escrow's arbiter. Under the escrow's row lock (every command on it serialises), so
 * concurrent refunds never sum past the payee's net payout. A repeat of (signer, signedAt, amount)
 * answers the first outcome, with `created` false. Throws 409 invalid_state past the deadline or over
 * the remaining amount, 403 unauthorized_ruling for a signer who is neither the payee nor the arbiter
 * or a signature that does not verify, 422 for a signedAt off the service clock.
 */
export async function refundAfterRelease(
  svc: CommandDeps,
  escrowId: string,
  input: RefundInput,
  idem?: IdemSlot,
): Promise<RefundResult & { created: boolean }> {
  const txOpts = commandTx(svc, [`escrow:${escrowId}`, idem && `idem:${idem.scope}`]);
  const r = await svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const { e, agent } = await lockEscrowWith(tx, escrowId, input.act.form === 'sandbox' ? input.act.agentId : undefined);
    const s = signed(
      e,
      input.act,
      agent,
      [
        ['payee', e.payee.publicKey],
        ['arbiter', e.arbiter?.publicKey],
      ],
      (at) => refundSigningBody(escrowId, input.amount, input.reason, at),
      '{escrowId, action: "refund", amount, reason, signedAt}',
    );
    const { closing, prior } = await closingAndPrior(tx, 'refunds', escrowId, s.signer, s.signedAt, input.amount);
    if (prior) return { refund: view(prior), proof: JSON.parse(prior.doc!) as Proof, created: false };
    const w = inWindow(e, closing, 'refund after release');
    const remaining = w.payeeNet - e.refunded;
    if (input.amount > remaining)
      throw invalidState(
        `cannot refund ${formatAmount(input.amount)}: ${formatAmount(remaining)} of the payee's net payout ${formatAmount(w.payeeNet)} remains to refund`,
      );
    if (!svc.custody.refund)
      throw invalidState(`cannot refund after release: ${svc.custody.kind} custody cannot move money after a closing`);
    await svc.proofLog.gate.beforeAppend();
    const refundId = newId('rfd');
    const moved = await svc.custody.refund(tx, {
      escrowId,
      reference: refundId,
      amount: input.amount,
      asset: e.asset,
      from: e.payee.publicKey,
      to: e.payer.publicKey,
    });
    if (!moved.ok) throw new AppError('custody_failed', `custody could not refund (${moved.error}); nothing was recorded: try again`);
    const at = e.now.toISOString();
    const total = e.refunded + input.amount;
    const proofId = newId('prf');
    const [issued] = extend(
      e.trailLength,
      e.trailHead,
      [
        {
          event: 'refund.issued',
          body: { refundId, amount: formatAmount(input.amount), reason: input.reason, by: s.signer, signedAt: s.signedAt, proofId },
        },
      ],
      at,
    );
    const key = await issuerSigner(tx, e.issuerKeyId);
    const { proof, jcs, leafHashHex } = signProofOnce(
      {
        id: proofId,
        escrowId,
        outcome: 'refunded-after-release',
        payer: e.payer.publicKey,
        payee: e.payee.publicKey,
        amount: formatAmount(input.amount),
        asset: e.asset,
        termsHash: e.termsHash,
        ...(e.deliveryHash ? { deliveryHash: e.deliveryHash } : {}),
        ...(e.verdictId ? { verdictId: e.verdictId } : {}),
        ...(e.disputeId ? { disputeId: e.disputeId } : {}),
        ...(e.mandateHash ? { mandateHash: e.mandateHash } : {}),
        adjusts: w.closing.id,
        refundedTotal: formatAmount(total),
        reason: input.reason,
        trailHead: issued.hash,
        trailLength: issued.index + 1,
        issuedAt: at,
      },
      key,
    );
    const entries = [
      issued,
      ...extend(
        issued.index + 1,
        issued.hash,
        [{ event: 'proof.issued', body: { proofId, outcome: 'refunded-after-release', adjusts: w.closing.id } }],
        at,
      ),
    ];
    const refund: RefundView = { id: refundId, amount: formatAmount(input.amount), reason: input.reason, by: s.signer, at };
    const writes: Stmt[] = [
      ...advanceEscrow(e, entries, { refunded: total }),
      {
        text: 'INSERT INTO proofs (id, escrow_id, leaf_index, leaf_hash, doc, issued_at, adjusts) VALUES ($1, $2, NULL, $3, $4, $5, $6)',
        params: [proofId, escrowId, leafHashHex, jcs, e.now, w.closing.id],
      },
      sequenceLeaf(proofId, leafHashHex),
      {
        text: `INSERT INTO refunds (id, escrow_id, amount, reason, signer, signed_at, signature, proof_id, trail_index, created_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        params: [
          refundId,
          escrowId,
          input.amount.toString(),
          input.reason,
          s.signer,
          s.signedAt,
          s.signature,
          proofId,
          issued.index,
          e.now,
        ],
      },
      // What returns to the payer goes back to its mandate's usage, or to its AP2 budget (docs/protocol.md §8, docs/ap2.md §5).
      ...(e.mandateId
        ? [{ text: 'UPDATE mandates SET spent = spent - $2 WHERE id = $1', params: [e.mandateId, input.amount.toString()] }]
        : e.mandateHash
          ? [
              {
                text: 'UPDATE ap2_mandates m SET spent = m.spent - $2 FROM ap2_escrows a WHERE a.escrow_id = $1 AND m.budget_key = a.budget_key',
                params: [escrowId, input.amount.toString()],
              },
            ]
          : []),
      ...idemStore(idem, 201, { refund, proof }),
    ];
    await tx.commitWith([fuse(writes)]);
    if (tx.afterCommit) tx.afterCommit(() => svc.proofLog.settled([{ entryId: proofId, leafHash: leafHashHex }]));
    return { refund, proof, created: true };
  }, txOpts);
  return r;
}

export interface RefundRequestView {
  id: string;
  amount: string;
  reason: string;
  by: string;
  at: string;
}

/**
 * A payer's request for a refund (docs/protocol.md §24.5), within the refund window: recorded, on the
 * trail as refund.requested (and its event); no money moves. A repeat of (signer, signedAt, amount)
 * answers the first. Refusals as for a refund: 409 outside the window, 403 for a signer who is not
 * the payer or a bad signature.
 */
export async function requestRefund(
  svc: CommandDeps,
  escrowId: string,
  input: RefundInput,
  idem?: IdemSlot,
): Promise<{ refundRequest: RefundRequestView; created: boolean }> {
  const txOpts = commandTx(svc, [`escrow:${escrowId}`, idem && `idem:${idem.scope}`]);
  return svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const { e, agent } = await lockEscrowWith(tx, escrowId, input.act.form === 'sandbox' ? input.act.agentId : undefined);
    const s = signed(
      e,
      input.act,
      agent,
      [['payer', e.payer.publicKey]],
      (at) => refundRequestSigningBody(escrowId, input.amount, input.reason, at),
      '{escrowId, action: "refund.request", amount, reason, signedAt}',
    );
    const { closing, prior } = await closingAndPrior(tx, 'refund_requests', escrowId, s.signer, s.signedAt, input.amount);
    if (prior) return { refundRequest: view(prior), created: false };
    inWindow(e, closing, 'request a refund of');
    const id = newId('rfq');
    const at = e.now.toISOString();
    const entries = extend(
      e.trailLength,
      e.trailHead,
      [
        {
          event: 'refund.requested',
          body: { requestId: id, amount: formatAmount(input.amount), reason: input.reason, by: s.signer, signedAt: s.signedAt },
        },
      ],
      at,
    );
    const refundRequest: RefundRequestView = { id, amount: formatAmount(input.amount), reason: input.reason, by: s.signer, at };
    await tx.commitWith([
      fuse([
        ...advanceEscrow(e, entries, {}),
        {
          text: `INSERT INTO refund_requests (id, escrow_id, amount, reason, signer, signed_at, signature, trail_index, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          params: [id, escrowId, input.amount.toString(), input.reason, s.signer, s.signedAt, s.signature, entries[0].index, e.now],
        },
        ...idemStore(idem, 201, { refundRequest }),
      ]),
    ]);
    return { refundRequest, created: true };
  }, txOpts);
}

/** The refunds after release of an escrow, oldest first (the escrow view's `refunds`). */
export async function refundsOf(q: Queryable, escrowId: string): Promise<RefundView[]> {
  const rows = await q.query<Prior>(
    `SELECT id, amount::text AS amount, reason, signer, created_at FROM refunds WHERE escrow_id = $1 ORDER BY created_at, id`,
    [escrowId],
  );
  return rows.map(view);
}
