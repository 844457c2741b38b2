// ES256 JWS (RFC 7515, RFC 7518 §3.4) over P-256 public keys given as JWKs (RFC 7517), with @noble/curves; Web APIs only.
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '../crypto/hash.ts';
import { concatBytes, toHex, utf8 } from '../crypto/bytes.ts';

const B64U = /^[A-Za-z0-9_-]*$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** base64url without padding (RFC 4648 §5, RFC 7515 §2). */
export function b64uEncode(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let c = 0; c < chars; c++) out += ALPHABET[(n >> (18 - 6 * c)) & 63];
  }
  return out;
}

/**
 * Strict base64url: the alphabet only, no padding, and the canonical spelling (unused trailing bits
 * zero), so one byte string has one text and a signature cannot be re-spelled into a new token.
 */
export function b64uDecode(s: string, name = 'base64url'): Uint8Array {
  if (typeof s !== 'string' || !B64U.test(s) || s.length % 4 === 1) throw new TypeError(`${name} is not base64url`);
  const out = new Uint8Array(Math.floor((s.length * 6) / 8));
  let acc = 0;
  let bits = 0;
  let j = 0;
  for (const ch of s) {
    acc = (acc << 6) | ALPHABET.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (acc >> bits) & 0xff;
    }
  }
  if (bits > 0 && (acc & ((1 << bits) - 1)) !== 0) throw new TypeError(`${name} is not canonical base64url (its unused bits are not zero)`);
  return out;
}

/** A base64url segment holding UTF-8 JSON. */
export function b64uJson(s: string, name: string): unknown {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(b64uDecode(s, name));
  return JSON.parse(text);
}

/** base64url SHA-256 of a string's bytes: SD-JWT's digest and sd_hash form (RFC 9901 §4.2.3, §4.3.1). */
export function b64uSha256(s: string): string {
  return b64uEncode(sha256(utf8(s)));
}

export interface P256Jwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid?: string;
  [k: string]: unknown;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The uncompressed SEC1 point of a P-256 JWK, checked to be on the curve; a TypeError names what is wrong. */
export function jwkPublicKey(jwk: unknown, name = 'jwk'): Uint8Array {
  if (!isObj(jwk)) throw new TypeError(`${name} must be a JWK object`);
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') throw new TypeError(`${name} must be an EC P-256 key (kty "EC", crv "P-256")`);
  if (jwk.d !== undefined) throw new TypeError(`${name} holds a private key ("d"); give the public key only`);
  if (jwk.alg !== undefined && jwk.alg !== 'ES256') throw new TypeError(`${name}.alg must be ES256 when present`);
  const x = b64uDecode(jwk.x as string, `${name}.x`);
  const y = b64uDecode(jwk.y as string, `${name}.y`);
  if (x.length !== 32 || y.length !== 32) throw new TypeError(`${name}.x and ${name}.y must each be 32 bytes`);
  const point = concatBytes(new Uint8Array([4]), x, y);
  try {
    p256.Point.fromBytes(point);
  } catch {
    throw new TypeError(`${name} is not a point on P-256`);
  }
  return point;
}

/** The public JWK of an uncompressed (or compressed) P-256 point. */
export function publicJwk(point: Uint8Array): P256Jwk {
  const raw = p256.Point.fromBytes(point).toBytes(false);
  return { kty: 'EC', crv: 'P-256', x: b64uEncode(raw.slice(1, 33)), y: b64uEncode(raw.slice(33, 65)) };
}

/** RFC 7638 JWK thumbprint (SHA-256, base64url) of a P-256 key. */
export function jwkThumbprint(jwk: P256Jwk): string {
  return b64uSha256(`{"crv":"P-256","kty":"EC","x":"${jwk.x}","y":"${jwk.y}"}`);
}

export interface Jws {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  /** ASCII(BASE64URL(header) || '.' || BASE64URL(payload)), the bytes the signature covers. */
  signingInput: string;
  /** r ‖ s, 64 bytes (RFC 7518 §3.4). */
  signature: Uint8Array;
}

/** Splits a compact JWS whose header and payload are JSON objects; a TypeError names the broken part. */
export function parseJws(compact: string, name = 'jws'): Jws {
  const parts = compact.split('.');
  if (parts.length !== 3) throw new TypeError(`${name} is not a compact JWS (header.payload.signature)`);
  const header = b64uJson(parts[0], `${name} header`);
  const payload = b64uJson(parts[1], `${name} payload`);
  if (!isObj(header)) throw new TypeError(`${name} header is not a JSON object`);
  if (!isObj(payload)) throw new TypeError(`${name} payload is not a JSON object`);
  const signature = b64uDecode(parts[2], `${name} signature`);
  return { header, payload, signingInput: `${parts[0]}.${parts[1]}`, signature };
}

/**
 * ES256 over the signing input with a P-256 point. High-S signatures verify (other signers make
 * them; RFC 7518 does not forbid them): callers that key state on a token use lowSForm.
 */
export function verifyEs256(jws: Jws, point: Uint8Array): boolean {
  if (jws.signature.length !== 64) return false;
  try {
    return p256.verify(jws.signature, utf8(jws.signingInput), point, { lowS: false });
  } catch {
    return false;
  }
}

/** The compact JWS with its signature in low-S form: the same signature whichever of its two forms was sent. */
export function lowSForm(compact: string): string {
  const jws = parseJws(compact);
  const sig = p256.Signature.fromBytes(jws.signature, 'compact');
  const low = sig.hasHighS() ? new p256.Signature(sig.r, p256.Point.Fn.neg(sig.s)) : sig;
  return `${jws.signingInput}.${b64uEncode(low.toBytes('compact'))}`;
}

/** Signs header.payload with ES256 (deterministic, low-S); returns the compact JWS. */
export function signEs256(header: Record<string, unknown>, payload: Record<string, unknown>, secretKey: Uint8Array): string {
  const input = `${b64uEncode(utf8(JSON.stringify(header)))}.${b64uEncode(utf8(JSON.stringify(payload)))}`;
  const sig = p256.sign(utf8(input), secretKey, { lowS: true });
  return `${input}.${b64uEncode(sig)}`;
}

/** The P-256 public point (uncompressed) of a 32-byte secret key. */
export function p256PublicKey(secretKey: Uint8Array): Uint8Array {
  return p256.getPublicKey(secretKey, false);
}

/** Hex of a P-256 point, for messages. */
export const pointHex = (point: Uint8Array) => toHex(point);
