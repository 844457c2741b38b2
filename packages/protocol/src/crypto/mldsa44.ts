// Owns ML-DSA-44 (FIPS 204) verification, the one post-quantum signature the protocol accepts: witness
// cosignatures of signed-note type 0x06 (c2sp.org/tlog-cosignature, "ML-DSA-44 signed message"). Pure
// ML-DSA with an empty context string, as that section requires; the service never signs with it.
import { ml_dsa44 } from '@noble/post-quantum/ml-dsa.js';

/** FIPS 204 Table 2, ML-DSA-44: public key and signature sizes in bytes. */
export const MLDSA44_PUBLIC_KEY_BYTES = 1312;
export const MLDSA44_SIGNATURE_BYTES = 2420;

/** True iff `sig` is a valid pure ML-DSA-44 signature (empty context) of `msg` under `publicKey`. */
export function verifyMlDsa44(sig: Uint8Array, msg: Uint8Array, publicKey: Uint8Array): boolean {
  if (sig.length !== MLDSA44_SIGNATURE_BYTES || publicKey.length !== MLDSA44_PUBLIC_KEY_BYTES) return false;
  try {
    return ml_dsa44.verify(sig, msg, publicKey) === true;
  } catch {
    // A key or signature noble cannot decode is not a valid signature.
    return false;
  }
}
