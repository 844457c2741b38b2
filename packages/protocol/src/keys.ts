// A party's Ed25519 keys on its own machine, as hex (private keys never leave the party). Web APIs only.
import { fromHex, isHex64, toHex } from './crypto/bytes.ts';
import { generateKeyPair, publicKeyOf, sign } from './crypto/ed25519.ts';
import { canonicalBytes } from './crypto/jcs.ts';
import type { Signature } from './types.ts';

/** A key pair as 64-hex strings: the 32-byte secret seed and the raw 32-byte public key. */
export interface KeyPairHex {
  secretKey: string;
  publicKey: string;
}

/** A fresh key pair from crypto.getRandomValues. Keep `secretKey` secret; give the service only `publicKey`. */
export function generateKeys(): KeyPairHex {
  const kp = generateKeyPair();
  return { secretKey: toHex(kp.secretKey), publicKey: toHex(kp.publicKey) };
}

/** The secret seed's bytes; a malformed key is a caller error that names the argument. */
export function secretKeyBytes(secretKey: string, name = 'secretKey'): Uint8Array {
  if (!isHex64(secretKey)) throw new TypeError(`${name} must be 64 lowercase hex characters (a 32-byte Ed25519 secret seed)`);
  return fromHex(secretKey, name);
}

/** The public key of a secret key. */
export function publicKeyFromSecret(secretKey: string, name = 'secretKey'): string {
  return toHex(publicKeyOf(secretKeyBytes(secretKey, name)));
}

/** A Signature {signer, signature} over the UTF-8 bytes of JCS(body). */
export function signBody(secretKey: string, body: unknown, name = 'secretKey'): Signature {
  const seed = secretKeyBytes(secretKey, name);
  return { signer: toHex(publicKeyOf(seed)), signature: toHex(sign(canonicalBytes(body), seed)) };
}
