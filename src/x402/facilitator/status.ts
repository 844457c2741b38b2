// A payment's settlement status (docs/x402.md "Settlement status"): what a payer or resource server
// whose settle timed out reads instead of settling again. Everything is read from the escrow's own
// rows in one statement: its state, verdict, proof, the payer's authorization and its trail.
import type { Services } from '../../services.ts';
import { notFound } from '../../errors.ts';
import { amountsOf } from '../../escrow/close.ts';
import type { Outcome, Proof } from '../../proof/proof.ts';
import { amountMicro } from '@escrow-settlement/protocol/amounts';

export const PAYMENT_STATUSES = ['authorized', 'captured', 'voided', 'expired', 'failed', 'refunded', 'partially_refunded'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export interface PaymentStatusView {
  paymentId: string;
  status: PaymentStatus;
  /** Atomic units (6 decimals), as the requirements' amount. */
  amounts: { authorized: string; captured: string; refunded: string; fee: string };
  /** The closing proof, then its adjustments, oldest first. */
  proofs: string[];
  captureDeadline: string | null;
  refundDeadline: string | null;
}

type Row = {
  escrow_id: string;
  amount: string;
  state: string;
  refunded: string;
  refund_deadline: Date | null;
  adjustments: string | null;
  passed: boolean | null;
  proof_id: string | null;
  doc: string | null;
  authorization: string | null;
  funded: string | null;
  timed_out: boolean;
};

/** The status of the x402 payment `paymentId`; 404 when there is none (tenancy is checked by the route). */
export async function paymentStatus(svc: Services, paymentId: string): Promise<PaymentStatusView> {
  const [r] = await svc.db.query<Row>(
    `SELECT x.escrow_id, x.amount, e.state, e.refunded::text AS refunded, e.refund_deadline, v.passed, p.id AS proof_id, p.doc,
            (SELECT string_agg(a.id, ',' ORDER BY a.issued_at, a.id) FROM proofs a WHERE a.adjusts = p.id) AS adjustments,
            (SELECT s.signed_body FROM party_signatures s WHERE s.escrow_id = x.escrow_id AND s.kind = 'x402' ORDER BY s.seq LIMIT 1) AS authorization,
            (SELECT t.body FROM trail_entries t WHERE t.escrow_id = x.escrow_id AND t.event = 'escrow.funded' LIMIT 1) AS funded,
            EXISTS (SELECT 1 FROM trail_entries t WHERE t.escrow_id = x.escrow_id AND t.event = 'escrow.timeout') AS timed_out
       FROM x402_payments x JOIN escrows e ON e.id = x.escrow_id
       LEFT JOIN verdicts v ON v.escrow_id = x.escrow_id LEFT JOIN proofs p ON p.escrow_id = x.escrow_id AND p.adjusts IS NULL
      WHERE x.escrow_id = $1`,
    [paymentId],
  );
  if (!r) throw notFound(`paymentId: no x402 payment ${paymentId}`);
  const authorized = BigInt(r.amount);
  const proof = r.doc ? (JSON.parse(r.doc) as Proof) : undefined;
  const paid = proof ? payoutsOf(proof, authorized) : { payee: 0n, fee: 0n };
  const refunded = BigInt(r.refunded);
  const authorization = r.authorization ? (JSON.parse(r.authorization) as Record<string, unknown>) : {};
  const fundedDeadline = r.funded ? (JSON.parse(r.funded) as { deadlineAt?: string }).deadlineAt : undefined;
  return {
    paymentId: r.escrow_id,
    status: statusOf(r, proof, paid.payee + paid.fee, refunded, paid.payee),
    amounts: {
      authorized: authorized.toString(),
      captured: (paid.payee + paid.fee).toString(),
      refunded: refunded.toString(),
      fee: paid.fee.toString(),
    },
    proofs: r.proof_id ? [r.proof_id, ...(r.adjustments ? r.adjustments.split(',') : [])] : [],
    captureDeadline: stringOr(authorization.captureDeadline) ?? fundedDeadline ?? null,
    refundDeadline: stringOr(authorization.refundDeadline) ?? r.refund_deadline?.toISOString() ?? null,
  };
}

/** The payee's net payout and the fee of a closing proof, in micro-units (atomic units). */
function payoutsOf(proof: Proof, authorized: bigint): { payee: bigint; fee: bigint } {
  if (proof.payouts) return { payee: amountMicro(proof.payouts.payee) ?? 0n, fee: amountMicro(proof.payouts.fee) ?? 0n };
  // A closing proof issued before payouts were recorded: the whole amount or the split's share, no fee.
  return { payee: amountsOf(authorized, proof.outcome as Exclude<Outcome, 'refunded-after-release'>, proof.shares).payee, fee: 0n };
}

const stringOr = (v: unknown) => (typeof v === 'string' ? v : undefined);

/**
 * Closed: refunded or partially_refunded once refunds after release gave back all or part of the
 * payee's net payout (the fee is not refunded); captured when the payee was paid anything (a
 * release, or a ruling's split), else the hold
 * went back to the payer: expired when a deadline did it, voided otherwise (the payee's void, a
 * refund, a ruling). Open: failed once the delivery failed the terms (still held, a dispute may
 * follow), authorized before that and while a passing capture waits for custody.
 */
function statusOf(r: Row, proof: Proof | undefined, captured: bigint, refunded: bigint, net: bigint): PaymentStatus {
  if (proof) {
    if (refunded > 0n) return refunded >= net ? 'refunded' : 'partially_refunded';
    if (captured > 0n) return 'captured';
    return r.timed_out ? 'expired' : 'voided';
  }
  if (r.passed === false) return 'failed';
  return 'authorized';
}
