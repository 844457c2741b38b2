// Keeping the parties' signatures the service relied on, so the offline bundle can carry them (docs/protocol.md §11.4).
// Deliveries and mandates already keep theirs in their own rows; this table holds the rest:
// dispute openings, evidence, ruling signatures and x402 authorizations.
import type { Queryable, Stmt } from '../db/types.ts';
import type { PartySignatureKind } from '@escrow-settlement/protocol/types';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { signJson } from '@escrow-settlement/protocol/crypto/ed25519';

/** Who is acting on an escrow: a held sandbox agent, or a party signing client-side (docs/protocol.md §6.1, §6.2). */
export type PartyAct =
  | { form: 'sandbox'; agentId: string }
  | { form: 'client'; party: string; signedAt: string; signature: { signer: string; signature: string } };

export interface PartySignatureRow {
  kind: Exclude<PartySignatureKind, 'mandate' | 'delivery'>;
  /** The trail entry it is bound to; null for a ruling, whose dispute.resolved entry is written when custody confirms. */
  trailIndex: number | null;
  publicKey: string;
  signedBody: unknown;
  signature: string;
}

/** One statement that keeps `sigs` for `escrowId`, in the command's own transaction. */
export function partySignatureWrite(escrowId: string, sigs: PartySignatureRow[]): Stmt {
  return {
    text: `INSERT INTO party_signatures (escrow_id, kind, trail_index, public_key, signed_body, signature)
           SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[])`,
    params: [
      escrowId,
      sigs.map((s) => s.kind),
      sigs.map((s) => s.trailIndex),
      sigs.map((s) => s.publicKey),
      sigs.map((s) => JSON.stringify(s.signedBody)),
      sigs.map((s) => s.signature),
    ],
  };
}

/**
 * The signed form of a dispute act (docs/protocol.md §6.1, §6.2): the client form
 * brings its signature over JCS {escrowId, action, …fields, signedAt}; for the sandbox form the
 * service signs that same body with the held agent key, as it signs sandbox deliveries, so every
 * act in a bundle carries the acting party's signature. `fields` are the client form's signed
 * fields for this act; `at` is the service time used as signedAt for the sandbox form.
 */
export async function signedAct(
  tx: Queryable,
  escrowId: string,
  act: PartyAct,
  action: 'dispute.open' | 'dispute.evidence',
  fields: Record<string, unknown>,
  party: string,
  at: string,
  trailIndex: number,
): Promise<PartySignatureRow> {
  const kind = action;
  if (act.form === 'client') {
    const signedBody = { escrowId, action, ...fields, signedAt: act.signedAt };
    return { kind, trailIndex, publicKey: party, signedBody, signature: act.signature.signature };
  }
  const rows = await tx.query<{ secret_key: string }>('SELECT secret_key FROM agents WHERE id = $1', [act.agentId]);
  const signedBody = { escrowId, action, ...fields, signedAt: at };
  return { kind, trailIndex, publicKey: party, signedBody, signature: signJson(signedBody, fromHex(rows[0].secret_key, 'secret_key')) };
}
