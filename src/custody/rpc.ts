// The JSON-RPC client: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/chain/rpc';
