// Ed25519 signing (RFC 8032 §5.1.6) with the secret key expanded once: noble's `sign` re-derives the
// expanded key and the public point (SHA-512 and a base-point multiplication) on every call, which is
// ~40% of a signature; the sender signs twice per event with one deployment-wide key (issue 16 item 2).
// Built from noble's own primitives (stay on noble); byte-identical to `sign` (test/webhooks/signer.test.ts).
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';

const L = ed.Point.CURVE().n;

function leToBig(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]);
  return n;
}

function bigTo32Le(n: bigint): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++, n >>= 8n) out[i] = Number(n & 0xffn);
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A signing function for one 32-byte secret seed; the expansion (scalar, prefix, public key) is done here, once. */
export function signerFor(secretKey: Uint8Array): (message: Uint8Array) => Uint8Array {
  const { prefix, scalar, pointBytes } = ed.utils.getExtendedPublicKey(secretKey);
  return (message) => {
    const r = leToBig(sha512(concat(prefix, message))) % L; // r = SHA512(prefix || M) mod L
    const R = ed.Point.BASE.multiply(r).toBytes(); // R = [r]B (noble refuses r = 0, probability 2^-252)
    const k = leToBig(sha512(concat(R, pointBytes, message))) % L; // k = SHA512(R || A || M) mod L
    return concat(R, bigTo32Le((r + k * scalar) % L)); // R || LE(S), S = (r + k·s) mod L
  };
}
