// The package's MCP entry point (`@escrow-settlement/client/mcp`): the local MCP server and its parts.
// It imports @modelcontextprotocol/sdk, an optional peer dependency that the rest of the package never
// loads, so a verifier or an HTTP client does not install an MCP stack it does not use (the service's MCP documentation).
export { startLocalServer, type LocalServerOptions } from './localServer.ts';
export { readKeyFile, signArguments, SIGNING_TOOLS, type LocalKey } from './signing.ts';
export {
  runVerifyBundle,
  ToolArgumentError,
  VERIFY_BUNDLE_INPUT,
  VERIFY_BUNDLE_OUTPUT,
  type VerifyBundleAnswer,
} from './verifyBundleTool.ts';
export { mcpMain, MCP_USAGE } from './cli.ts';
