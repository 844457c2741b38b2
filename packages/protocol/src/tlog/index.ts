// Public surface of the generic RFC 6962 / RFC 9162 transparency-log toolkit: each module below is
// public whole (append.ts, tiles.ts and cosignature.ts are imported by their own paths).
export * from './hash.ts';
export * from './nodes.ts';
export * from './proofs.ts';
export * from './verify.ts';
export * from './memory.ts';
export * from './checkpoint.ts';
export * from './encoding.ts';
