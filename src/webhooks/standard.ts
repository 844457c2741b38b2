// Standard Webhooks signing (standardwebhooks.com): the per-endpoint whsec_ secret, the whpk_ form of
// the deployment's Ed25519 key, and the two signature schemes of one webhook-signature header.
// Web APIs and @noble only (the core).
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { fromBase64, fromHex, toBase64, utf8 } from '@escrow-settlement/protocol/crypto/bytes';

export const SECRET_PREFIX = 'whsec_';
export const PUBLIC_KEY_PREFIX = 'whpk_';

/** A fresh endpoint secret, stored as the base64 of 32 random bytes (the spec asks for 24 to 64). */
export function newEndpointSecret(): string {
  return toBase64(crypto.getRandomValues(new Uint8Array(32)));
}

/** The secret as receivers configure it: `whsec_` + base64, what the standardwebhooks libraries take. */
export const formatSecret = (storedBase64: string) => `${SECRET_PREFIX}${storedBase64}`;

/** The deployment's Ed25519 webhook public key (hex in the database) as `whpk_` + base64 of its 32 bytes. */
export const formatPublicKey = (publicKeyHex: string) => `${PUBLIC_KEY_PREFIX}${toBase64(fromHex(publicKeyHex, 'publicKey'))}`;

/** The signed content of both schemes: `${webhook-id}.${webhook-timestamp}.${body}`. */
export const signedContent = (id: string, timestamp: number, body: string) => utf8(`${id}.${timestamp}.${body}`);

/** `v1,<base64 HMAC-SHA256>` keyed with the base64-decoded secret (the spec's symmetric scheme). */
export function v1Signature(content: Uint8Array, secretKey: Uint8Array): string {
  return `v1,${toBase64(hmac(sha256, secretKey, content))}`;
}

/** `v1a,<base64 Ed25519>` by the deployment's webhook key (the spec's asymmetric scheme). */
export function v1aSignature(content: Uint8Array, sign: (message: Uint8Array) => Uint8Array): string {
  return `v1a,${toBase64(sign(content))}`;
}

/** The HMAC key of a stored secret; cached by the caller (decoding is per endpoint, not per event). */
export const secretKeyBytes = (storedBase64: string) => fromBase64(storedBase64, 'webhook secret');
