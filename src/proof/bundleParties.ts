// The parties' side of an offline bundle: every signature the service relied on to close the matter, bound to its trail entry (docs/protocol.md §11.4).
import type { Queryable } from '../db/types.ts';
import type { BundleParties, PartySignature, Proof, TrailEntry } from '@escrow-settlement/protocol/types';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { ap2Consent } from '@escrow-settlement/protocol/ap2/consent';
import { deliverySigningBody, refundRequestSigningBody, refundSigningBody } from './signedBodies.ts';

const ORDER: Record<PartySignature['kind'], number> = {
  mandate: 0,
  ap2: 0,
  x402: 1,
  delivery: 2,
  'x402.void': 3,
  'dispute.open': 4,
  'dispute.evidence': 5,
  ruling: 6,
  refund: 7,
  'refund.request': 7,
};

/**
 * Gathers, for the matter `proof` closed, within the trail the proof covers:
 * - mandate: the mandate's {principal, caps} and the principal's signature (mandates table);
 * - ap2: the AP2 Payment Mandate chain (and checkout mandate) an AP2 escrow was created under (ap2_escrows);
 * - delivery: {escrowId, contentHash, submittedAt} and the payee's signature (deliveries table);
 * - dispute.open, dispute.evidence, x402: as kept by their commands (party_signatures);
 * - x402.void: the payee's void, which its escrow.refunded entry records whole;
 * - ruling: the signatures kept at resolve time whose body is the ruling the trail records
 *   (a ruling whose custody failed and was decided again keeps only the final one's).
 * Ordered by trail index, then kind.
 */
export async function bundleParties(q: Queryable, proof: Proof, trail: TrailEntry[]): Promise<BundleParties> {
  const escrowId = proof.escrowId;
  const [deliveries, mandates, kept, ap2, money] = await Promise.all([
    q.query<{ content_hash: string; submitted_at: string; signature: string; amount: string | null }>(
      'SELECT content_hash, submitted_at, signature, amount::text AS amount FROM deliveries WHERE escrow_id = $1',
      [escrowId],
    ),
    q.query<{ principal: string; caps: string; signature: string }>(
      'SELECT m.principal, m.caps, m.signature FROM escrows e JOIN mandates m ON m.id = e.mandate_id WHERE e.id = $1',
      [escrowId],
    ),
    q.query<{ kind: PartySignature['kind']; trail_index: number | null; public_key: string; signed_body: string; signature: string }>(
      'SELECT kind, trail_index, public_key, signed_body, signature FROM party_signatures WHERE escrow_id = $1 ORDER BY seq',
      [escrowId],
    ),
    q.query<{ chain: string; checkout: string | null }>('SELECT chain, checkout FROM ap2_escrows WHERE escrow_id = $1', [escrowId]),
    // Refunds after release and refund requests (docs/protocol.md §24.4, §24.5): the signer's consent for each.
    q.query<{
      kind: 'refund' | 'refund.request';
      amount: string;
      reason: string;
      signer: string;
      signed_at: string;
      signature: string;
      trail_index: number;
    }>(
      `SELECT 'refund' AS kind, amount::text AS amount, reason, signer, signed_at, signature, trail_index FROM refunds WHERE escrow_id = $1
       UNION ALL
       SELECT 'refund.request', amount::text, reason, signer, signed_at, signature, trail_index FROM refund_requests WHERE escrow_id = $1`,
      [escrowId],
    ),
  ]);
  const indexOf = (event: string) => trail.findIndex((t) => t.event === event);
  const out: PartySignature[] = [];

  if (mandates.length && proof.mandateHash) {
    const m = mandates[0];
    const sig = JSON.parse(m.signature) as { signer: string; signature: string };
    out.push({
      kind: 'mandate',
      trailIndex: 0,
      publicKey: m.principal,
      signedBody: { principal: m.principal, caps: JSON.parse(m.caps) },
      signature: sig.signature,
    });
  }
  // ap2: the AP2 Payment Mandate chain the escrow was created under (docs/ap2.md §6).
  if (ap2.length && proof.mandateHash) out.push(ap2Consent(ap2[0].chain, ap2[0].checkout));
  const delivered = indexOf('delivery.submitted');
  if (deliveries.length && delivered >= 0) {
    const d = deliveries[0];
    const sig = JSON.parse(d.signature) as { signer: string; signature: string };
    out.push({
      kind: 'delivery',
      trailIndex: delivered,
      publicKey: sig.signer,
      // A partial capture signs its amount too (docs/protocol.md §24.2).
      signedBody: deliverySigningBody(escrowId, d.content_hash, d.submitted_at, d.amount === null ? undefined : BigInt(d.amount)),
      signature: sig.signature,
    });
  }
  const refunded = indexOf('escrow.refunded');
  const voided =
    refunded >= 0 ? (trail[refunded].body as { void?: { signer: string; signedAt: string; signature: string } }).void : undefined;
  if (voided) {
    out.push({
      kind: 'x402.void',
      trailIndex: refunded,
      publicKey: voided.signer,
      signedBody: { escrowId, action: 'void', signedAt: voided.signedAt },
      signature: voided.signature,
    });
  }
  const resolved = indexOf('dispute.resolved');
  const ruled = resolved >= 0 ? (trail[resolved].body as Record<string, unknown>) : undefined;
  for (const k of kept) {
    const signedBody = JSON.parse(k.signed_body) as Record<string, unknown>;
    if (k.kind === 'ruling') {
      if (
        !ruled ||
        signedBody.disputeId !== ruled.disputeId ||
        signedBody.outcome !== ruled.outcome ||
        canonicalize(signedBody.shares ?? null) !== canonicalize(ruled.shares ?? null)
      )
        continue;
      out.push({ kind: 'ruling', trailIndex: resolved, publicKey: k.public_key, signedBody, signature: k.signature });
    } else if (k.trail_index !== null && k.trail_index < trail.length) {
      out.push({ kind: k.kind, trailIndex: k.trail_index, publicKey: k.public_key, signedBody, signature: k.signature });
    }
  }
  for (const m of money) {
    if (m.trail_index >= trail.length) continue;
    const body = m.kind === 'refund' ? refundSigningBody : refundRequestSigningBody;
    out.push({
      kind: m.kind,
      trailIndex: m.trail_index,
      publicKey: m.signer,
      signedBody: body(escrowId, BigInt(m.amount), m.reason, m.signed_at),
      signature: m.signature,
    });
  }
  out.sort((a, b) => a.trailIndex - b.trailIndex || ORDER[a.kind] - ORDER[b.kind]);
  return { signatures: out };
}
