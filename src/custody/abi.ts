// EVM ABI encoding for the escrow contract: defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/chain/abi';
