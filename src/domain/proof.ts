// The settlement proof: built from a closing, signed by the issuer key over JCS of every field but
// `signature`, hashed into a transparency-log leaf (SPEC part 2, Proof).
import { signJson } from '../crypto/ed25519.ts';
import type { SigningKey } from './keys.ts';

import type { Proof } from '@escrow-settlement/client/types';

// The wire shape lives in the client module (what auditors handle); the server issues exactly it.
export type { Proof };
export type Outcome = Proof['outcome'];
export type Shares = NonNullable<Proof['shares']>;

export type UnsignedProof = Omit<Proof, 'signature'>;

export function signProof(body: UnsignedProof, key: SigningKey): Proof {
  return { ...body, signature: { signer: key.publicKey, signature: signJson(body, key.secretKey) } };
}

export function withoutSignature(p: Proof): UnsignedProof {
  const { signature: _s, ...rest } = p;
  return rest;
}

/** Leaf hash of the transparency log: SHA-256(0x00 || JCS(proof)) (SPEC part 2), the auditor's own function. */
export { proofLeafHash } from '@escrow-settlement/client/verify';
