// A payment's settlement status (docs/x402.md "Settlement status"): what a payer or resource server
// whose settle timed out reads instead of settling again. Everything is read from the escrow's own
// rows in one statement: its state, verdict, proof, the payer's authorization and its trail.
import type { Services } from '../../services.ts';
import { notFound } from '../../errors.ts';
import { amountsOf } from '../../escrow/close.ts';
import type { Proof } from '../../proof/proof.ts';

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
    `SELECT x.escrow_id, x.amount, e.state, v.passed, p.id AS proof_id, p.doc,
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
  const captured = proof ? amountsOf(authorized, proof.outcome, proof.shares).payee : 0n;
  const authorization = r.authorization ? (JSON.parse(r.authorization) as Record<string, unknown>) : {};
  const fundedDeadline = r.funded ? (JSON.parse(r.funded) as { deadlineAt?: string }).deadlineAt : undefined;
  return {
    paymentId: r.escrow_id,
    status: statusOf(r, proof, captured),
    amounts: { authorized: authorized.toString(), captured: captured.toString(), refunded: '0', fee: '0' },
    proofs: r.proof_id ? [r.proof_id] : [],
    captureDeadline: stringOr(authorization.captureDeadline) ?? fundedDeadline ?? null,
    refundDeadline: stringOr(authorization.refundDeadline) ?? null,
  };
}

const stringOr = (v: unknown) => (typeof v === 'string' ? v : undefined);

/**
 * Closed: captured when the payee was paid anything (a release, or a ruling's split), else the hold
 * went back to the payer: expired when a deadline did it, voided otherwise (the payee's void, a
 * refund, a ruling). Open: failed once the delivery failed the terms (still held, a dispute may
 * follow), authorized before that and while a passing capture waits for custody.
 */
function statusOf(r: Row, proof: Proof | undefined, captured: bigint): PaymentStatus {
  if (proof) {
    if (captured > 0n) return 'captured';
    return r.timed_out ? 'expired' : 'voided';
  }
  if (r.passed === false) return 'failed';
  return 'authorized';
}
