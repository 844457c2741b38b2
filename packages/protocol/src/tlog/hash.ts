// RFC 6962 §2.1 / RFC 9162 §2.1.1 Merkle tree hashing: domain-separated leaf and interior node hashes.
import { sha256 } from '@noble/hashes/sha2.js';

/** Length in bytes of every hash in the tree (SHA-256). */
export const HASH_SIZE = 32;

/** MTH({}) = SHA-256() — the root of the empty tree (RFC 6962 §2.1). */
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

/** MTH({d(0)}) = SHA-256(0x00 || d(0)) — the hash of one leaf (RFC 6962 §2.1). */
export function leafHash(data: Uint8Array): Uint8Array {
  const buf = new Uint8Array(1 + data.length);
  buf[0] = 0x00;
  buf.set(data, 1);
  return sha256(buf);
}

/** SHA-256(0x01 || left || right) — the hash of an interior node (RFC 6962 §2.1). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  const buf = new Uint8Array(1 + left.length + right.length);
  buf[0] = 0x01;
  buf.set(left, 1);
  buf.set(right, 1 + left.length);
  return sha256(buf);
}

/** True when `h` is a byte array of exactly HASH_SIZE bytes. */
export function isHash(h: unknown): h is Uint8Array {
  return h instanceof Uint8Array && h.length === HASH_SIZE;
}

/** Constant-shape byte comparison (lengths and contents). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
