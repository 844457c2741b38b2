// Who is acting on a dispute: a held sandbox agent, or a party signing client-side (docs/protocol.md §6.1, §6.2).
import type { Queryable, Stmt } from '../db/types.ts';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { AppError, notFound, unprocessable } from '../errors.ts';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import type { Locked } from '../escrow/escrowRow.ts';
import { MAX_SKEW_MS } from '../escrow/deliver.ts';
import type { PartyAct } from '../escrow/partySignatures.ts';

/**
 * The acting party's key, after checking it is the payer or payee. The client form's signature
 * covers JCS of {escrowId, action, …fields, signedAt}, so it cannot be replayed on another escrow
 * or action, and signedAt must be within 300 s of the service clock.
 */
export async function actingParty(
  tx: Queryable,
  e: Locked,
  act: PartyAct,
  action: string,
  fields: Record<string, unknown>,
): Promise<string> {
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
    throw unprocessable(
      `signature.signature does not verify over JCS {escrowId, action: "${action}", ${Object.keys(fields).join(', ')}${Object.keys(fields).length ? ', ' : ''}signedAt} with the party key`,
    );
  }
  return act.party;
}

/**
 * Replay (docs/protocol.md §6.4): a client-signed action is identified by its signer and the exact bytes
 * signed (not by the signature, since Ed25519 verification may accept more than one encoding of one
 * signature). The same action sent again is 409 `replayed`, checked under the escrow's row lock, and
 * recorded in the transaction that applies it, so it counts once even when sent twice at once.
 */
export function signedActionHash(signer: string, signed: Record<string, unknown>): string {
  return sha256Hex(`${signer}\n${canonicalize(signed)}`);
}

/** The hash of a party act's signed body, or null for the sandbox form (the service signs nothing replayable). */
export function partyActHash(escrowId: string, act: PartyAct, action: string, fields: Record<string, unknown>): string | null {
  return act.form === 'client' ? signedActionHash(act.party, { escrowId, action, ...fields, signedAt: act.signedAt }) : null;
}

/** Throws 409 `replayed` when any of the hashes was already accepted. Call under the escrow's row lock. */
export async function assertFresh(tx: Queryable, hashes: Array<string | null>, what: string): Promise<void> {
  const hs = hashes.filter((h): h is string => h !== null);
  if (hs.length === 0) return;
  const seen = await tx.query('SELECT 1 FROM signed_actions WHERE action_hash = ANY($1::text[]) LIMIT 1', [hs]);
  if (seen.length > 0)
    throw new AppError(
      'replayed',
      `this signed ${what} was already accepted once; nothing was added. Sign a new one (a fresh signedAt) to act again`,
    );
}

/** The rows recording accepted signed actions, for the applying transaction's batch. */
export const recordSigned = (escrowId: string, hashes: Array<string | null>): Stmt[] => {
  const hs = [...new Set(hashes.filter((h): h is string => h !== null))];
  return hs.length === 0
    ? []
    : [
        {
          text: 'INSERT INTO signed_actions (action_hash, escrow_id) SELECT h, $2 FROM unnest($1::text[]) AS h ON CONFLICT DO NOTHING',
          params: [hs, escrowId],
        },
      ];
};
