// The custody journal as users see it, and the retry that finishes a journaled closing exactly once.
import type { CommandDeps } from '../commandDeps.ts';
import { notFound } from '../errors.ts';
import { formatAmount } from '../units/amounts.ts';
import { lockEscrow } from './escrowRow.ts';
import { transition } from './states.ts';
import { closeMatter, type Closing } from './close.ts';
import { custodyFailed } from './refund.ts';
import { proofOfEscrow } from '../proof/proofs.ts';
import type { Proof } from '../proof/proof.ts';

type Row = {
  escrow_id: string;
  status: string;
  outcome: string;
  payer_amount: string;
  payee_amount: string;
  attempts: number;
  last_error: string | null;
  reference: string;
  created_at: Date;
  updated_at: Date;
  fee_amount: string | null;
  fee_recipient: string | null;
  refunds: string | null;
};

export async function getCustody(svc: CommandDeps, escrowId: string) {
  const rows = await svc.db.query<Row>(
    `SELECT e.id AS escrow_id, c.status, c.outcome, c.payer_amount::text AS payer_amount, c.payee_amount::text AS payee_amount,
            c.attempts, c.last_error, c.reference, c.created_at, c.updated_at,
            c.fee_amount::text AS fee_amount, c.fee_recipient,
            (SELECT json_agg(json_build_object('id', r.id, 'amount', r.amount::text, 'at', r.created_at) ORDER BY r.created_at, r.id)::text
               FROM refunds r WHERE r.escrow_id = e.id) AS refunds
       FROM escrows e LEFT JOIN custody c ON c.escrow_id = e.id WHERE e.id = $1`,
    [escrowId],
  );
  if (rows.length === 0) throw notFound(`no escrow ${escrowId}`);
  const r = rows[0];
  if (!r.status) throw notFound(`escrow ${escrowId} has no settlement attempt yet`);
  return {
    escrowId,
    status: r.status,
    outcome: r.outcome,
    payerAmount: formatAmount(BigInt(r.payer_amount)),
    payeeAmount: formatAmount(BigInt(r.payee_amount)),
    attempts: Number(r.attempts),
    ...(r.last_error ? { lastError: r.last_error } : {}),
    // Each leg of the closing (docs/protocol.md §24.1): the fee, when one was paid, and every refund after release.
    ...(r.fee_amount && BigInt(r.fee_amount) > 0n ? { feeAmount: formatAmount(BigInt(r.fee_amount)), feeRecipient: r.fee_recipient } : {}),
    refunds: (JSON.parse(r.refunds ?? '[]') as Array<{ id: string; amount: string; at: string }>).map((x) => ({
      id: x.id,
      amount: formatAmount(BigInt(x.amount)),
      from: 'payee',
      to: 'payer',
      at: new Date(x.at).toISOString(),
    })),
    reference: r.reference,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/**
 * Finishes a journaled closing. A confirmed entry returns its proof without touching custody
 * (never double-sent); a failed one settles again with the journaled intent.
 */
export async function retryCustody(svc: CommandDeps, escrowId: string): Promise<Proof> {
  const r = await svc.db.tx(async (tx) => {
    const e = await lockEscrow(tx, escrowId);
    if (!e.custodyJournalStatus) throw notFound(`escrow ${escrowId} has no journaled settlement to retry`);
    if (e.custodyJournalStatus === 'confirmed') return { confirmed: true as const };
    transition('custody-retry', e);
    const closing = JSON.parse(e.custodyClosing!) as Closing;
    return { confirmed: false as const, closed: await closeMatter(tx, svc, { e, closing }) };
  });
  if (r.confirmed) return proofOfEscrow(svc.db, escrowId);
  if (!r.closed.ok) throw custodyFailed(r.closed);
  return r.closed.proof;
}
