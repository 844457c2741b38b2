// RFC 8785 canonical JSON: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/crypto/jcs';
