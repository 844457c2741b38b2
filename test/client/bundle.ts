// A synthetic offline bundle built with no service: node:crypto keys, an in-memory tlog tree, a hand-made trail.
import { createHash, randomBytes } from 'node:crypto';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { createMemoryTree } from '@escrow-settlement/protocol/tlog/memory';
import { inclusionProof, treeRoot } from '@escrow-settlement/protocol/tlog/proofs';
import type { Bundle, IssuerKey } from '@escrow-settlement/protocol/types';
import { hex, leafHashOf, makeTrail, outsideKey, unhex } from '../tlog/fixtures.ts';

export const keyIdOf = (publicKey: string) =>
  `iss_${createHash('sha256').update(Buffer.from(publicKey, 'hex')).digest('hex').slice(0, 16)}`;

/** The proof sits at leaf 4 of a 9-leaf log; the issuer rotated once, and the active key signs both. */
export async function makeBundle() {
  const old = outsideKey();
  const active = outsideKey();
  const issuerKeys: IssuerKey[] = [
    {
      keyId: keyIdOf(old.publicKey),
      alg: 'ed25519',
      publicKey: old.publicKey,
      validFrom: '2026-01-01T00:00:00.000Z',
      validUntil: '2026-06-01T00:00:00.000Z',
    },
    { keyId: keyIdOf(active.publicKey), alg: 'ed25519', publicKey: active.publicKey, validFrom: '2026-06-01T00:00:00.000Z' },
  ];
  const at = '2026-11-21T10:00:00.000Z';
  const trail = makeTrail(3, at);
  const terms = { description: 'synthetic', checks: [] };
  const body = {
    id: 'prf_01jd0000000000000000000000',
    escrowId: 'esc_01jd0000000000000000000000',
    outcome: 'released' as const,
    payer: 'a'.repeat(64),
    payee: 'b'.repeat(64),
    amount: '10',
    asset: 'USDC',
    termsHash: createHash('sha256').update(canonicalize(terms)).digest('hex'),
    deliveryHash: 'd'.repeat(64),
    verdictId: 'vrd_01jd0000000000000000000000',
    trailHead: trail[2].hash,
    trailLength: 3,
    issuedAt: at,
  };
  const proof = { ...body, signature: { signer: active.publicKey, signature: active.sign(body) } };
  const tree = createMemoryTree();
  for (let i = 0; i < 9; i++) tree.appendLeafHash(i === 4 ? unhex(leafHashOf(proof)) : new Uint8Array(randomBytes(32)));
  const rootHash = hex(await treeRoot(9, tree.read));
  const signedAt = '2026-11-21T10:00:01.000Z';
  const head = {
    logSize: 9,
    rootHash,
    signedAt,
    keyId: keyIdOf(active.publicKey),
    signature: { signer: active.publicKey, signature: active.sign({ logSize: 9, rootHash, signedAt }) },
  };
  const bundle: Bundle = {
    proof,
    trail,
    inclusion: {
      leafIndex: 4,
      leafHash: leafHashOf(proof),
      logSize: 9,
      rootHash,
      auditPath: (await inclusionProof(4, 9, tree.read)).map(hex),
      head,
    },
    issuerKeys,
    terms,
  };
  return { bundle, old, active, tree };
}
