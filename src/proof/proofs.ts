// Reading proofs back and checking them against the published keys and the trail (docs/protocol.md §11.2).
import type { Queryable } from '../db/types.ts';
import { AppError, notFound } from '../errors.ts';
import { logSize } from '../tlog/store.ts';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { issuerKeys } from './keys.ts';
import { readTrail } from '../escrow/escrowRow.ts';
import { firstBreak, GENESIS } from '@escrow-settlement/protocol/trail/chain';
import { withoutSignature, type Proof } from './proof.ts';

export async function getProof(q: Queryable, id: string): Promise<Proof> {
  const rows = await q.query<{ doc: string }>('SELECT doc FROM proofs WHERE id = $1', [id]);
  if (rows.length === 0) throw notFound(`no proof ${id}`);
  return JSON.parse(rows[0].doc);
}

export async function proofOfEscrow(q: Queryable, escrowId: string): Promise<Proof> {
  const rows = await q.query<{ doc: string | null; exists: boolean }>(
    'SELECT p.doc, true AS exists FROM escrows e LEFT JOIN proofs p ON p.escrow_id = e.id AND p.adjusts IS NULL WHERE e.id = $1',
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

/** A proof with its place in the log: the leaf index once integrated, and the log size covering it. */
export interface ProofLeaf {
  proof: Proof;
  escrowId: string;
  leafIndex: number;
  leafHash: string;
  logSize: number;
}

/**
 * The proof and its integrated leaf. A leaf still pending (its closing returned past
 * LOG_INTEGRATE_WAIT_MS, or the integrator is catching up after a crash) is 503 with Retry-After:
 * the proof exists, its inclusion does not yet.
 */
export async function proofLeaf(q: Queryable, proofId: string): Promise<ProofLeaf> {
  const [rows, size] = await Promise.all([
    q.query<{ doc: string; escrow_id: string; leaf_index: string | null; leaf_hash: string }>(
      'SELECT doc, escrow_id, leaf_index::text AS leaf_index, leaf_hash FROM proofs WHERE id = $1',
      [proofId],
    ),
    logSize(q),
  ]);
  if (rows.length === 0) throw notFound(`no proof ${proofId}`);
  const r = rows[0];
  if (r.leaf_index === null) {
    throw new AppError('unavailable', `proof ${proofId} is sequenced but its log leaf is not integrated yet; retry in a moment`, {
      headers: { 'retry-after': '1' },
    });
  }
  const leafIndex = Number(r.leaf_index);
  // The two reads ran side by side: a batch that committed between them indexed this leaf after
  // the size was read, so read the size again (it only grows).
  const covering = leafIndex < size ? size : await logSize(q);
  return { proof: JSON.parse(r.doc), escrowId: r.escrow_id, leafIndex, leafHash: r.leaf_hash, logSize: covering };
}

/** Proofs at leaf indices [start, end), in leaf order (GET /v1/log/entries). */
export async function proofsInLeafRange(q: Queryable, start: number, end: number): Promise<Array<{ leafIndex: number; proof: Proof }>> {
  const rows = await q.query<{ leaf_index: string; doc: string }>(
    // ORDER BY the bigint column, not the text alias (which would sort "10" before "2").
    'SELECT p.leaf_index::text AS leaf_index, p.doc FROM proofs p WHERE p.leaf_index >= $1 AND p.leaf_index < $2 ORDER BY p.leaf_index',
    [start, end],
  );
  return rows.map((r) => ({ leafIndex: Number(r.leaf_index), proof: JSON.parse(r.doc) as Proof }));
}

/**
 * The adjustment proofs of a closing proof with their leaves, in issue order (docs/protocol.md §24.6).
 * 503 like proofLeaf while one is not yet integrated.
 */
export async function adjustmentsOf(q: Queryable, closingId: string): Promise<ProofLeaf[]> {
  const rows = await q.query<{ id: string }>('SELECT id FROM proofs WHERE adjusts = $1 ORDER BY issued_at, id', [closingId]);
  const leaves: ProofLeaf[] = [];
  for (const r of rows) leaves.push(await proofLeaf(q, r.id));
  return leaves.sort((a, b) => a.proof.trailLength - b.proof.trailLength);
}
