// A collected payment as capture and void find it: its record, the escrow's state, its verdict and
// its proof, read in one statement; and the settle answers built from them, so a repeated capture
// or void answers exactly as the first (docs/x402.md "Idempotency").
import type { Services } from '../../services.ts';
import type { Caller } from '../../http/route.ts';
import { scopeOf } from '../../access/tenancy.ts';
import { refuse } from './refusal.ts';

export interface Payment {
  escrowId: string;
  payTo: string;
  nonce: string;
  payloadHash: string;
  payer: string;
  network: string;
  /** The authorized amount, atomic units. */
  amount: string;
  state: string;
  verdict?: { id: string; escrowId: string; deliveryId: string; passed: boolean; results: unknown; decidedAt: string };
  proofId?: string;
  /** The payer's signed authorization (kept for the bundle): the fee bounds and deadlines it binds. */
  authorization: Record<string, unknown>;
  /** The capture consent acted on: the delivery's signature by payTo. */
  deliverySignature?: string;
  /** The void consent acted on, when a void refunded the escrow (escrow.refunded records it). */
  voidSignature?: string;
}

export interface SettleAnswer {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  transaction: string;
  network: string;
  payer: string;
  amount?: string;
  extra: Record<string, unknown>;
}

/**
 * The payment an escrow id names, as the caller may see it: unknown, not a facilitator payment, or
 * (hosted) another key's escrow are one refusal, so a capture cannot probe what exists.
 */
export async function findPayment(svc: Services, caller: Caller, escrowId: string): Promise<Payment> {
  const scope = scopeOf(caller);
  const [r] = await svc.db.query(
    `SELECT x.escrow_id, x.pay_to, x.nonce, x.payload_hash, x.payer, x.network, x.amount, e.state,
            v.id AS verdict_id, v.delivery_id, v.passed, v.results, v.decided_at, p.id AS proof_id, d.signature AS delivery_signature,
            (SELECT s.signed_body FROM party_signatures s WHERE s.escrow_id = x.escrow_id AND s.kind = 'x402' ORDER BY s.seq LIMIT 1) AS authorization,
            (SELECT t.body FROM trail_entries t WHERE t.escrow_id = x.escrow_id AND t.event = 'escrow.refunded' LIMIT 1) AS refunded
       FROM x402_payments x JOIN escrows e ON e.id = x.escrow_id
       LEFT JOIN verdicts v ON v.escrow_id = x.escrow_id LEFT JOIN proofs p ON p.escrow_id = x.escrow_id AND p.adjusts IS NULL
       LEFT JOIN deliveries d ON d.escrow_id = x.escrow_id
      WHERE x.escrow_id = $1 AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM escrow_tenants t WHERE t.escrow_id = x.escrow_id AND t.key_id = $2))`,
    [escrowId, scope],
  );
  if (!r) throw refuse('payment_invalid', `paymentPayload.payload.paymentId: no x402 payment ${escrowId}`);
  return {
    escrowId: r.escrow_id,
    payTo: r.pay_to,
    nonce: r.nonce,
    payloadHash: r.payload_hash,
    payer: r.payer,
    network: r.network,
    amount: r.amount,
    state: r.state,
    ...(r.verdict_id
      ? {
          verdict: {
            id: r.verdict_id,
            escrowId: r.escrow_id,
            deliveryId: r.delivery_id,
            passed: r.passed,
            results: JSON.parse(r.results),
            decidedAt: r.decided_at,
          },
        }
      : {}),
    ...(r.proof_id ? { proofId: r.proof_id } : {}),
    authorization: r.authorization ? JSON.parse(r.authorization) : {},
    ...(r.delivery_signature ? { deliverySignature: JSON.parse(r.delivery_signature).signature } : {}),
    ...(r.refunded && JSON.parse(r.refunded).void ? { voidSignature: JSON.parse(r.refunded).void.signature } : {}),
  };
}

/** The answer to a capture whose delivery was judged: the proof on a pass, the verdict on a fail. */
export function captureAnswer(p: Payment): SettleAnswer {
  const base = { network: p.network, payer: p.payer };
  const v = p.verdict!;
  if (!v.passed) {
    return {
      success: false,
      errorReason: 'verdict_failed',
      errorMessage: "the delivery fails the payment's terms: the escrow stays delivered (dispute, refund or timeout)",
      transaction: p.escrowId,
      ...base,
      extra: { escrowId: p.escrowId, verdict: v },
    };
  }
  if (!p.proofId) {
    return {
      success: false,
      errorReason: 'custody_failed',
      errorMessage:
        'the delivery passed but custody could not settle; the settlement is journaled: retry with POST /v1/escrows/{id}/custody/retry',
      transaction: p.escrowId,
      ...base,
      extra: { escrowId: p.escrowId, verdict: v },
    };
  }
  return { success: true, transaction: p.proofId, ...base, extra: { escrowId: p.escrowId, state: 'settled' } };
}

/** The answer to a void that refunded the escrow. */
export const voidAnswer = (p: Payment): SettleAnswer => ({
  success: true,
  transaction: p.proofId!,
  network: p.network,
  payer: p.payer,
  extra: { escrowId: p.escrowId, state: 'refunded' },
});
