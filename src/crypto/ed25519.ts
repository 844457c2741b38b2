// Ed25519 signing and the verification policy: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/crypto/ed25519';
