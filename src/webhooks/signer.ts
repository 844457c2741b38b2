// The webhook key's signing function: the sender signs twice per event with one deployment-wide key,
// so the key is expanded once (src/crypto/signer.ts, the same signer the issuer key uses; docs/performance.md
// §4.1). Byte-identical to noble's `sign` (test/webhooks/signer.test.ts, test/protocol/crypto).
import { createSigner } from '../crypto/signer.ts';

/** A signing function for one 32-byte secret seed; the expansion (scalar, prefix, public key) is done once. */
export function signerFor(secretKey: Uint8Array): (message: Uint8Array) => Uint8Array {
  const signer = createSigner(secretKey);
  return (message) => signer.sign(message);
}
