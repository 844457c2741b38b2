// The evidence trail hash chain: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/trail/chain';
