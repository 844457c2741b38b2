// C2SP tlog-tiles paths and tile arithmetic: defined once in the client package, which monitors and auditors use.
export * from '@escrow-settlement/client/tlog/tiles';
