// Reading proofs back and checking them against the published keys and the trail (SPEC part 4).
import type { Queryable } from '../db/types.ts';
import { notFound } from '../errors.ts';
import { canonicalBytes } from '../crypto/jcs.ts';
import { verifyHex } from '../crypto/ed25519.ts';
import { issuerKeys } from './keys.ts';
import { readTrail } from './escrowRow.ts';
import { firstBreak, GENESIS } from '../trail/chain.ts';
import { withoutSignature, type Proof } from './proof.ts';

export async function getProof(q: Queryable, id: string): Promise<Proof> {
  const rows = await q.query<{ doc: string }>('SELECT doc FROM proofs WHERE id = $1', [id]);
  if (rows.length === 0) throw notFound(`no proof ${id}`);
  return JSON.parse(rows[0].doc);
}

export async function proofOfEscrow(q: Queryable, escrowId: string): Promise<Proof> {
  const rows = await q.query<{ doc: string | null; exists: boolean }>(
    'SELECT p.doc, true AS exists FROM escrows e LEFT JOIN proofs p ON p.escrow_id = e.id WHERE e.id = $1',
    [escrowId],
  );
  if (rows.length === 0) throw notFound(`no escrow ${escrowId}`);
  if (!rows[0].doc) throw notFound(`escrow ${escrowId} has not closed: no proof yet`);
  return JSON.parse(rows[0].doc);
}

/** Issuer signature over JCS of every field but `signature` (no key check). */
export function proofSignatureValid(p: Proof): boolean {
  try {
    return verifyHex(p.signature.signature, canonicalBytes(withoutSignature(p)), p.signature.signer);
  } catch {
    return false;
  }
}

export async function verifyStoredProof(q: Queryable, id: string) {
  const proof = await getProof(q, id);
  const [keys, trail] = await Promise.all([issuerKeys(q), readTrail(q, proof.escrowId)]);
  const published = keys.some((k) => k.publicKey === proof.signature.signer);
  const brk = firstBreak(trail);
  const atLength = proof.trailLength === 0 ? GENESIS : trail[proof.trailLength - 1]?.hash;
  return {
    proofId: proof.id,
    signatureValid: published && proofSignatureValid(proof),
    trailIntact: brk === null,
    trailHeadMatches: atLength === proof.trailHead && (brk === null || brk >= proof.trailLength),
    issuer: proof.signature.signer,
  };
}
