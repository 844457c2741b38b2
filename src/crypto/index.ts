// Owns the public surface of the crypto module: bytes, JCS, hashing, Ed25519 and ids.

export * from './bytes.ts';
export * from './jcs.ts';
export * from './hash.ts';
export * from './ed25519.ts';
export * from './ids.ts';
