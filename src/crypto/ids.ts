// Owns record ids (prefix + '_' + lowercase ULID) and issuer key ids.

import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';

// Crockford base32 (https://www.crockford.com/base32.html) in lowercase: no i, l, o, u.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const PREFIX_RE = /^[a-z][a-z0-9]*$/;
// 48-bit timestamp in 10 chars leaves the first char at most '7'.
const ULID_BODY = '[0-7][0-9a-hjkmnp-tv-z]{25}';
const MAX_TIME = 2 ** 48 - 1;
const RANDOM_MAX = (1n << 80n) - 1n;

// Last id's time and randomness, for monotonic ids within one millisecond (ULID spec,
// "Monotonicity"): ids made in order in this process sort in order.
let lastTime = -1;
let lastRandom = 0n;

// Randomness for ids comes from a pool filled 1 KiB at a time, each byte used once: asking
// getRandomValues for 10 bytes per id was about 1% of the service's CPU under load
// (docs/performance.md §4.3). Ids are public; the bytes are the same CSPRNG's.
const pool = new Uint8Array(1024);
let poolAt = pool.length;

function randomBits80(): bigint {
  if (poolAt + 10 > pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  // Two 40-bit halves, big-endian, as Numbers (exact below 2^53).
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < 5; i++) hi = hi * 256 + pool[poolAt + i];
  for (let i = 5; i < 10; i++) lo = lo * 256 + pool[poolAt + i];
  poolAt += 10;
  return (BigInt(hi) << 40n) | BigInt(lo);
}

function encodeTime(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

/** 8 base32 characters of a 40-bit Number, most significant first. */
function encode40(n: number): string {
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

function encodeRandom(r: bigint): string {
  return encode40(Number(r >> 40n)) + encode40(Number(r & 0xffffffffffn));
}

function requirePrefix(prefix: string): void {
  if (typeof prefix !== 'string' || !PREFIX_RE.test(prefix)) {
    throw new TypeError('prefix must be lowercase letters and digits, starting with a letter');
  }
}

/**
 * A new id: `prefix_` + 26-char lowercase ULID (10 chars of 48-bit ms time, 16 chars of
 * 80 random bits). Within one millisecond the randomness is incremented, so ids sort in
 * creation order. With the default clock a backwards step reuses the last time (order wins);
 * an explicit `now` is honoured as given.
 */
export function newId(prefix: string, now?: number): string {
  requirePrefix(prefix);
  let ms = now ?? Date.now();
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_TIME) {
    throw new RangeError('now must be an integer number of milliseconds in [0, 2^48)');
  }
  if (now === undefined && ms < lastTime) ms = lastTime;
  let random: bigint;
  if (ms === lastTime) {
    if (lastRandom === RANDOM_MAX) throw new RangeError('ULID randomness overflow within one millisecond');
    random = lastRandom + 1n;
  } else {
    random = randomBits80();
  }
  lastTime = ms;
  lastRandom = random;
  return `${prefix}_${encodeTime(ms)}${encodeRandom(random)}`;
}

/** True when `s` is `prefix_` followed by a well-formed lowercase ULID. */
export function isId(prefix: string, s: unknown): s is string {
  requirePrefix(prefix);
  return typeof s === 'string' && new RegExp(`^${prefix}_${ULID_BODY}$`).test(s);
}

/** Issuer key id: `iss_` + first 16 hex chars of sha256(public key bytes). */
export function issuerKeyId(publicKey: Uint8Array): string {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
    throw new TypeError('publicKey must be a 32-byte Uint8Array');
  }
  return `iss_${sha256Hex(publicKey).slice(0, 16)}`;
}
