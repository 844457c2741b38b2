// Minted-key authentication without a database round trip per request (docs/design.md §5, "Minted-key auth"), and
// revocation that still holds on the very next request on every instance.
//
// How: a verified key is cached per instance with the revocation generation read in the same
// snapshot as the key row (api_key_generation, migration 004). Every revocation bumps the
// generation in its own statement. Every authenticated /v1 request already makes one round trip,
// the shared rate-limit upsert, and that statement also returns the current generation. When it
// differs from the cached entry's, the key is looked up again before the handler runs; a revoked
// key then gets its 401. So a cached key costs nothing extra, and a revocation anywhere is seen by
// the next request anywhere: the check rides on a statement the request makes anyway.

export interface CachedKey {
  keyId: string;
  rateLimitMax?: number;
  /** The revocation generation the key was verified at. */
  generation: number;
}

/** Bounded: beyond this many distinct secrets the oldest verified entry is dropped (and re-read when used). */
const MAX_ENTRIES = 10_000;

export interface AuthCache {
  get(secretHash: string): CachedKey | undefined;
  set(secretHash: string, key: CachedKey): void;
  delete(secretHash: string): void;
}

export function createAuthCache(max = MAX_ENTRIES): AuthCache {
  const map = new Map<string, CachedKey>();
  return {
    get: (h) => map.get(h),
    set(h, key) {
      map.delete(h);
      map.set(h, key);
      if (map.size > max) map.delete(map.keys().next().value as string);
    },
    delete: (h) => void map.delete(h),
  };
}
