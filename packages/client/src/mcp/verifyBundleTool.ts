// The verify_bundle tool's schemas and runner live in the protocol package, which the service's /mcp
// stands on too; this module keeps the client's import path for them.
export * from '@escrow-settlement/protocol/mcp/verifyBundleTool';
