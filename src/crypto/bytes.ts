// Hex, base64 and UTF-8 helpers: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/crypto/bytes';
