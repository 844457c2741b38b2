// An Ed25519 signer that derives its key's public half once (RFC 8032 §5.1.5) instead of on every
// signature. noble's ed.sign(msg, seed) re-hashes the seed and re-multiplies the base point for A
// on every call: that was 7.6% of the service's busy CPU under load (docs/performance.md §4.1). Still noble:
// the same field and point arithmetic, only the per-key part is kept.
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { concatBytes as concat, fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import '@escrow-settlement/protocol/crypto/ed25519'; // wires noble's synchronous SHA-512

// The group order L (RFC 8032 §5.1).
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function numberLE(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]);
  return n;
}

function bytes32LE(n: bigint): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return out;
}

export interface Signer {
  /** The 32-byte public key A. */
  readonly publicKey: Uint8Array;
  /** The deterministic 64-byte signature R || S of message (RFC 8032 §5.1.6), equal to ed.sign(message, seed). */
  sign(message: Uint8Array): Uint8Array;
}

/** A signer for a 32-byte secret seed; the expensive per-key derivation happens here, once. */
export function createSigner(secretKey: Uint8Array): Signer {
  if (!(secretKey instanceof Uint8Array) || secretKey.length !== 32) throw new TypeError('secretKey must be 32 bytes');
  const { prefix, scalar, pointBytes } = ed.utils.getExtendedPublicKey(secretKey);
  const A = Uint8Array.from(pointBytes);
  const s = scalar;
  const pre = Uint8Array.from(prefix);
  return {
    publicKey: A,
    sign(message: Uint8Array): Uint8Array {
      // r = SHA-512(prefix || M) mod L; R = [r]B; k = SHA-512(R || A || M) mod L; S = (r + k·s) mod L.
      const r = numberLE(sha512(concat(pre, message))) % L;
      const R = ed.Point.BASE.multiply(r).toBytes();
      const k = numberLE(sha512(concat(R, A, message))) % L;
      return concat(R, bytes32LE((r + k * s) % L));
    },
  };
}

// Signers of held keys (sandbox agents) by secret hex, so an agent signing its deliveries derives
// its public half once. Bounded: past the bound the cache starts over (a miss only costs a derive).
const held = new Map<string, Signer>();
const HELD_MAX = 10_000;

export function heldSigner(secretKeyHex: string): Signer {
  let s = held.get(secretKeyHex);
  if (!s) {
    if (held.size >= HELD_MAX) held.clear();
    s = createSigner(fromHex(secretKeyHex, 'secretKey'));
    held.set(secretKeyHex, s);
  }
  return s;
}
