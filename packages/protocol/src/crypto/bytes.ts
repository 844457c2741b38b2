// Owns byte-level encodings (hex, UTF-8, base64) and constant-time comparison, using Web APIs only.

const HEX_RE = /^[0-9a-fA-F]*$/;
const HEX64_RE = /^[0-9a-f]{64}$/;
// RFC 4648 §4 standard alphabet with mandatory padding (no whitespace, no URL-safe chars),
// so one byte string has exactly one accepted encoding.
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const HEX_TABLE: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

const encoder = new TextEncoder();

/** Lowercase hex of the bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += HEX_TABLE[bytes[i]];
  return out;
}

/**
 * Decode hex (either case) into bytes. Throws a TypeError naming `name`
 * when the input is not a string, has odd length, or has a non-hex character.
 */
export function fromHex(hex: string, name = 'hex'): Uint8Array {
  if (typeof hex !== 'string') throw new TypeError(`${name} must be a hex string`);
  if (hex.length % 2 !== 0) throw new TypeError(`${name} must have an even number of hex characters`);
  if (!HEX_RE.test(hex)) throw new TypeError(`${name} must contain only hex characters`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** UTF-8 bytes of a string (lone surrogates become U+FFFD, per the WHATWG Encoding Standard). */
export function utf8(str: string): Uint8Array {
  return encoder.encode(str);
}

/** Concatenate byte arrays into a new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** Standard padded base64 (RFC 4648 §4). */
export function toBase64(bytes: Uint8Array): string {
  // Build the binary string byte by byte: String.fromCharCode(...bytes) overflows the
  // argument limit on large inputs.
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}

/**
 * Decode standard padded base64 (RFC 4648 §4). Throws a TypeError naming `name` for
 * anything else: atob alone would accept whitespace and missing padding.
 */
export function fromBase64(str: string, name = 'base64'): Uint8Array {
  if (typeof str !== 'string' || !BASE64_RE.test(str)) {
    throw new TypeError(`${name} must be standard padded base64`);
  }
  const binary = atob(str);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** True for exactly 64 lowercase hex characters (a 32-byte key or hash). */
export function isHex64(s: unknown): s is string {
  return typeof s === 'string' && HEX64_RE.test(s);
}

/**
 * Compare two byte arrays without an early exit, so the time taken does not reveal
 * where they first differ. Different lengths return false at once (length is not secret).
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
