// Shared test helpers for tlog: vector loading, hex, a naive RFC 6962 §2.1 reference, counting readers.
import { readFileSync, readdirSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import { leafHash, nodeHash } from '@escrow-settlement/protocol/tlog/hash';
import type { NodeId } from '@escrow-settlement/protocol/tlog/nodes';
import type { HashReader } from '@escrow-settlement/protocol/tlog/proofs';

export const VECTORS = new URL('../../vectors/', import.meta.url);

export function readJson<T = any>(rel: string): T {
  return JSON.parse(readFileSync(new URL(rel, VECTORS), 'utf8')) as T;
}

/** Relative paths (POSIX) of every .json file under a vectors subdirectory, sorted. */
export function listJson(relDir: string): string[] {
  const dir = new URL(relDir.endsWith('/') ? relDir : `${relDir}/`, VECTORS);
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.split('\\').join('/'))
    .sort();
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));
export const unb64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'));

/** Deterministic PRNG (mulberry32) so random sampling is reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Wraps a reader, recording every call's ids. */
export function countingReader(read: HashReader): { read: HashReader; calls: NodeId[][] } {
  const calls: NodeId[][] = [];
  return {
    calls,
    read: async (ids) => {
      calls.push(ids.map((id) => ({ ...id })));
      return read(ids);
    },
  };
}

// ---- Naive recursive RFC 6962 §2.1 reference over leaf hashes (D[n] = list of leaf hashes). ----

function largestPow2Below(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) (RFC 6962 §2.1). */
export function naiveMth(d: Uint8Array[]): Uint8Array {
  if (d.length === 0) return sha256(new Uint8Array(0));
  if (d.length === 1) return d[0];
  const k = largestPow2Below(d.length);
  return nodeHash(naiveMth(d.slice(0, k)), naiveMth(d.slice(k)));
}

/** PATH(m, D[n]) (RFC 6962 §2.1.1). */
export function naivePath(m: number, d: Uint8Array[]): Uint8Array[] {
  if (d.length <= 1) return [];
  const k = largestPow2Below(d.length);
  return m < k ? [...naivePath(m, d.slice(0, k)), naiveMth(d.slice(k))] : [...naivePath(m - k, d.slice(k)), naiveMth(d.slice(0, k))];
}

function subproof(m: number, d: Uint8Array[], b: boolean): Uint8Array[] {
  if (m === d.length) return b ? [] : [naiveMth(d)];
  const k = largestPow2Below(d.length);
  return m <= k
    ? [...subproof(m, d.slice(0, k), b), naiveMth(d.slice(k))]
    : [...subproof(m - k, d.slice(k), false), naiveMth(d.slice(0, k))];
}

/** PROOF(m, D[n]) = SUBPROOF(m, D[n], true) (RFC 6962 §2.1.2). */
export function naiveProof(m: number, d: Uint8Array[]): Uint8Array[] {
  return subproof(m, d, true);
}

/** Leaf hashes of UTF-8 "leaf 0".."leaf n-1". */
export function sampleLeaves(n: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) => leafHash(new TextEncoder().encode(`leaf ${i}`)));
}
