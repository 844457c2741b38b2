// Owns Ed25519 (RFC 8032 §5.1) key generation, signing and the service's one pinned verification policy.

import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { fromHex, isHex64, toHex } from './bytes.ts';
import { canonicalBytes } from './jcs.ts';

// noble v3 needs a SHA-512 for its synchronous API (RFC 8032 §5.1 uses SHA-512 throughout).
ed.hashes.sha512 = sha512;

/*
 * Verification policy, pinned: RFC 8032 strict (noble `{zip215: false}`).
 * It rejects non-canonical encodings of R and A (RFC 8032 §5.1.3 decoding, y >= p) and
 * S >= L (§5.1.7 step 1), and small-order public keys / R, so one signature has exactly one
 * accepted encoding (strongly binding, non-malleable). Honest signatures verify under every
 * policy; policies differ only on adversarial inputs, so the service must use this one
 * everywhere. The ed25519-speccheck test vectors pin this behaviour.
 */
const VERIFY_OPTS = { zip215: false } as const;

const SIG_HEX_RE = /^[0-9a-f]{128}$/;

export interface KeyPair {
  secretKey: Uint8Array;
  publicKey: Uint8Array;
}

function requireBytes(value: unknown, length: number | undefined, name: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${name} must be a Uint8Array`);
  if (length !== undefined && value.length !== length) {
    throw new TypeError(`${name} must be ${length} bytes, got ${value.length}`);
  }
  return value;
}

/** A fresh key pair: 32-byte secret seed from crypto.getRandomValues, and its 32-byte public key. */
export function generateKeyPair(): KeyPair {
  const secretKey = crypto.getRandomValues(new Uint8Array(32));
  return { secretKey, publicKey: ed.getPublicKey(secretKey) };
}

/** The 32-byte public key of a 32-byte secret seed (RFC 8032 §5.1.5). */
export function publicKeyOf(secretKey: Uint8Array): Uint8Array {
  return ed.getPublicKey(requireBytes(secretKey, 32, 'secretKey'));
}

/** Deterministic 64-byte signature R || S of `message` (RFC 8032 §5.1.6). */
export function sign(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  requireBytes(message, undefined, 'message');
  return ed.sign(message, requireBytes(secretKey, 32, 'secretKey'));
}

/**
 * Verify under the pinned strict policy. Invalid is a value, malformed is a throw:
 * wrong types or lengths throw a TypeError naming the argument; a signature that does not
 * verify, including one whose R or A fails to decode, returns false.
 */
export function verify(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  requireBytes(signature, 64, 'signature');
  requireBytes(message, undefined, 'message');
  requireBytes(publicKey, 32, 'publicKey');
  try {
    return ed.verify(signature, message, publicKey, VERIFY_OPTS);
  } catch {
    return false;
  }
}

/** Hex signature of `message` with a hex secret seed (64 lowercase hex chars). */
export function signHex(message: Uint8Array, secretKeyHex: string): string {
  if (!isHex64(secretKeyHex)) throw new TypeError('secretKeyHex must be 64 lowercase hex characters');
  return toHex(sign(message, fromHex(secretKeyHex, 'secretKeyHex')));
}

/**
 * Verify a hex signature. A signature that is not 128 lowercase hex characters is simply
 * not a valid signature (false); a public key that is not 64 lowercase hex characters is a
 * caller error (TypeError), since keys come from configuration, not from the counterparty.
 */
export function verifyHex(signatureHex: string, message: Uint8Array, publicKeyHex: string): boolean {
  if (!isHex64(publicKeyHex)) throw new TypeError('publicKeyHex must be 64 lowercase hex characters');
  requireBytes(message, undefined, 'message');
  if (typeof signatureHex !== 'string' || !SIG_HEX_RE.test(signatureHex)) return false;
  return verify(fromHex(signatureHex, 'signatureHex'), message, fromHex(publicKeyHex, 'publicKeyHex'));
}

/** Hex signature over the UTF-8 bytes of the RFC 8785 canonical form of `value`. */
export function signJson(value: unknown, secretKey: Uint8Array): string {
  return toHex(sign(canonicalBytes(value), secretKey));
}

/** Verify a hex signature over the RFC 8785 canonical bytes of `value` (rules as verifyHex). */
export function verifyJson(value: unknown, signatureHex: string, publicKeyHex: string): boolean {
  return verifyHex(signatureHex, canonicalBytes(value), publicKeyHex);
}
