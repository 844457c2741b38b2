// Owns the public surface of the crypto module: bytes, JCS, hashing, Ed25519 and ids.

export * from '@escrow-settlement/protocol/crypto/bytes';
export * from '@escrow-settlement/protocol/crypto/jcs';
export * from '@escrow-settlement/protocol/crypto/hash';
export * from '@escrow-settlement/protocol/crypto/ed25519';
export * from './ids.ts';
