// The settlement proof: built from a closing, signed by the issuer key over JCS of every field but
// `signature`, hashed into a transparency-log leaf (docs/protocol.md §11.1).
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { canonicalBytes } from '@escrow-settlement/protocol/crypto/jcs';

import type { Proof } from '@escrow-settlement/protocol/types';

// The wire shape lives in the client module (what auditors handle); the server issues exactly it.
export type { Proof };
export type Outcome = Proof['outcome'];
export type Shares = NonNullable<Proof['shares']>;

export type UnsignedProof = Omit<Proof, 'signature'>;

/** Signs with a cached issuer signer (src/proof/keys.ts issuerSigner): the public half is derived once per key. */
export function signProof(body: UnsignedProof, key: { publicKey: string; sign(message: Uint8Array): Uint8Array }): Proof {
  return { ...body, signature: { signer: key.publicKey, signature: toHex(key.sign(canonicalBytes(body))) } };
}

export function withoutSignature(p: Proof): UnsignedProof {
  const { signature: _s, ...rest } = p;
  return rest;
}

/** Leaf hash of the transparency log: SHA-256(0x00 || JCS(proof)) (docs/protocol.md §12.1), the auditor's own function. */
export { proofLeafHash } from '@escrow-settlement/protocol/verify';
