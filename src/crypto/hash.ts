// SHA-256 helpers: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/crypto/hash';
