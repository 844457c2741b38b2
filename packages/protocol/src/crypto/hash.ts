// Owns SHA-256 hashing of bytes, strings (as UTF-8) and JSON values (as RFC 8785 JCS).

import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { toHex, utf8 } from './bytes.ts';
import { canonicalize } from './jcs.ts';

function asBytes(input: Uint8Array | string): Uint8Array {
  if (typeof input === 'string') return utf8(input);
  if (input instanceof Uint8Array) return input;
  throw new TypeError('input must be a Uint8Array or a string');
}

/** SHA-256 (FIPS 180-4) digest; a string is hashed as its UTF-8 bytes. */
export function sha256(input: Uint8Array | string): Uint8Array {
  return nobleSha256(asBytes(input));
}

/** Lowercase hex SHA-256 digest; a string is hashed as its UTF-8 bytes. */
export function sha256Hex(input: Uint8Array | string): string {
  return toHex(sha256(input));
}

/** Lowercase hex SHA-256 of the UTF-8 bytes of the RFC 8785 canonical form of `value`. */
export function hashJson(value: unknown): string {
  return sha256Hex(canonicalize(value));
}
