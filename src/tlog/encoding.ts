// Strict base64 and hex for the log's wire formats: defined once in the client package.
export * from '@escrow-settlement/client/tlog/encoding';
