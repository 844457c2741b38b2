// RFC 6962 inclusion and consistency proof verification: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/tlog/verify';
