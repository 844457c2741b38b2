// Who is acting on a dispute: a held sandbox agent, or a party signing client-side (CONTRACT §3).
import type { Queryable } from '../db/types.ts';
import { canonicalBytes } from '../crypto/jcs.ts';
import { verifyHex } from '../crypto/ed25519.ts';
import { notFound, unprocessable } from '../errors.ts';
import type { Locked } from './escrowRow.ts';
import { MAX_SKEW_MS } from './deliver.ts';

export type PartyAct =
  | { form: 'sandbox'; agentId: string }
  | { form: 'client'; party: string; signedAt: string; signature: { signer: string; signature: string } };

/**
 * The acting party's key, after checking it is the payer or payee. The client form's signature
 * covers JCS of {escrowId, action, …fields, signedAt}, so it cannot be replayed on another escrow
 * or action, and signedAt must be within 300 s of the service clock.
 */
export async function actingParty(tx: Queryable, e: Locked, act: PartyAct, action: string, fields: Record<string, unknown>): Promise<string> {
  const parties = [e.payer.publicKey, e.payee.publicKey];
  if (act.form === 'sandbox') {
    const rows = await tx.query<{ public_key: string }>('SELECT public_key FROM agents WHERE id = $1', [act.agentId]);
    if (rows.length === 0) throw notFound(`agentId: no agent ${act.agentId}`);
    if (!parties.includes(rows[0].public_key)) throw unprocessable(`agentId: agent ${act.agentId} is not a party to this escrow`);
    return rows[0].public_key;
  }
  if (!parties.includes(act.party)) throw unprocessable('party is not the payer or payee of this escrow');
  if (act.signature.signer !== act.party) throw unprocessable('signature.signer must be the party');
  const skew = Math.abs(Date.parse(act.signedAt) - e.now.getTime());
  if (skew > MAX_SKEW_MS) throw unprocessable(`signedAt is ${Math.round(skew / 1000)} s from the service clock; at most 300 s is accepted`);
  const body = { escrowId: e.id, action, ...fields, signedAt: act.signedAt };
  if (!verifyHex(act.signature.signature, canonicalBytes(body), act.party)) {
    throw unprocessable(`signature.signature does not verify over JCS {escrowId, action: "${action}", ${Object.keys(fields).join(', ')}${Object.keys(fields).length ? ', ' : ''}signedAt} with the party key`);
  }
  return act.party;
}
