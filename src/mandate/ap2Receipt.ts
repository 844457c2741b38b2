// AP2 v0.2 Payment Receipts (payment_receipt.json) for AP2 matters that closed, ES256-signed by AP2_RECEIPT_KEY (docs/ap2.md §7).
import type { Queryable } from '../db/types.ts';
import { invalidState, notFound } from '../errors.ts';
import { jwkThumbprint, p256PublicKey, publicJwk, signEs256, type P256Jwk } from '@escrow-settlement/protocol/ap2/jose';

/** The receipt key: its secret stays in the process (read from its file at start), its JWK is published. */
export interface ReceiptKey {
  secret: Uint8Array;
  /** Public JWK with kid (RFC 7638 thumbprint), alg ES256 and use sig, as the issuer document lists it. */
  jwk: P256Jwk & { kid: string; alg: 'ES256'; use: 'sig' };
}

export function receiptKey(secret: Uint8Array): ReceiptKey {
  const pub = publicJwk(p256PublicKey(secret));
  return { secret, jwk: { ...pub, kid: jwkThumbprint(pub), alg: 'ES256', use: 'sig' } };
}

type Row = {
  closed_sd_hash: string;
  state: string;
  proof_id: string | null;
  doc: string | null;
  issued_at: Date | null;
  reference: string | null;
};

/**
 * The receipt of an AP2 escrow's closing: status Success for a released matter; Error for a refunded
 * one (error "refunded") and for a split ruling (error "split": the payment was not made as the
 * mandate authorized it). `reference` is the closed mandate's hash in sd_hash form; `iat` is when
 * the proof was issued, so the receipt is the same whenever it is asked for (ES256 here is deterministic).
 */
export async function ap2Receipt(q: Queryable, key: ReceiptKey, issuer: string, escrowId: string) {
  const [r] = await q.query<Row>(
    `SELECT a.closed_sd_hash, e.state, p.id AS proof_id, p.doc, p.issued_at, c.reference
       FROM escrows e LEFT JOIN ap2_escrows a ON a.escrow_id = e.id LEFT JOIN proofs p ON p.escrow_id = e.id AND p.adjusts IS NULL
       LEFT JOIN custody c ON c.escrow_id = e.id WHERE e.id = $1`,
    [escrowId],
  );
  if (!r) throw notFound(`no escrow ${escrowId}`);
  if (!r.closed_sd_hash) throw notFound(`escrow ${escrowId} was not created under an AP2 Payment Mandate: it has no AP2 receipt`);
  if (!r.proof_id || !r.doc || !r.issued_at)
    throw invalidState(`escrow ${escrowId} is ${r.state}: its AP2 receipt exists once the matter closes with a proof`);
  const proof = JSON.parse(r.doc) as { outcome: string; shares?: unknown };
  const base = {
    iss: issuer,
    iat: Math.floor(new Date(r.issued_at).getTime() / 1000),
    reference: r.closed_sd_hash,
    payment_id: escrowId,
  };
  const claims =
    proof.outcome === 'released'
      ? { status: 'Success', ...base, psp_confirmation_id: r.proof_id, network_confirmation_id: r.reference ?? r.proof_id }
      : proof.outcome === 'refunded'
        ? { status: 'Error', ...base, error: 'refunded', error_description: `the escrow was refunded to the payer (proof ${r.proof_id})` }
        : {
            status: 'Error',
            ...base,
            error: 'split',
            error_description: `a ruling split the escrow between payer and payee (proof ${r.proof_id}); the payment was not made as authorized`,
          };
  const receipt = signEs256({ alg: 'ES256', typ: 'JWT', kid: key.jwk.kid }, claims, key.secret);
  return { receipt, claims, kid: key.jwk.kid };
}
