// How an escrow maps onto the chain (escrowRef, payout addresses, wei): defined once in the client package, which auditors verify with offline.
export * from '@escrow-settlement/client/chain/mapping';
