// RFC 6962 leaf and node hashing: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/tlog/hash';
