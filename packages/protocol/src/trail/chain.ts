// The per-escrow evidence trail: a hash chain of {index, prevHash, at, event, body}.
import { canonicalize } from '../crypto/jcs.ts';
import { sha256Hex } from '../crypto/hash.ts';
import type { TrailEntry } from '../types.ts';

export const GENESIS = '0'.repeat(64);

export type { TrailEntry };

export interface NewEvent {
  event: string;
  body: Record<string, unknown>;
}

export function entryHash(e: Omit<TrailEntry, 'hash'>): string {
  return sha256Hex(canonicalize({ index: e.index, prevHash: e.prevHash, at: e.at, event: e.event, body: e.body }));
}

/** Chains new events onto a trail of `length` entries whose last hash is `head`. */
export function extend(length: number, head: string, events: NewEvent[], at: string): TrailEntry[] {
  const out: TrailEntry[] = [];
  let prevHash = head;
  events.forEach((ev, i) => {
    const base = { index: length + i, prevHash, at, event: ev.event, body: ev.body };
    const hash = entryHash(base);
    out.push({ ...base, hash });
    prevHash = hash;
  });
  return out;
}

/** Index of the first entry that breaks the chain, or null when it verifies end to end. */
export function firstBreak(entries: ReadonlyArray<TrailEntry>): number | null {
  let prev = GENESIS;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.index !== i || e.prevHash !== prev || entryHash(e) !== e.hash) return i;
    prev = e.hash;
  }
  return null;
}
