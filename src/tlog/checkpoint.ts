// C2SP signed notes, checkpoints and verifier keys: defined once in the client package, which witnesses and auditors use.
export * from '@escrow-settlement/client/tlog/checkpoint';
