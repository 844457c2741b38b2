// The MCP server of one /mcp request and its answer (docs/mcp.md). The SDK's low-level Server, not McpServer:
// McpServer takes zod schemas, while the tools' schemas are JSON Schema generated from the structs the
// REST routes validate with (src/mcp/schemas.ts), which the low-level Server lists as they are.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, RequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Ctx } from '../http/route.ts';
import { VERSION } from '../services.ts';
import { toolListings } from './tools.ts';
import { callTool, isTool, turnstile } from './dispatch.ts';

export const SERVER_NAME = 'escrow-settlement';

const INSTRUCTIONS =
  'Escrows between software agents: create_escrow, fund_escrow, then submit_delivery; a delivery that passes the terms settles and returns a signed settlement proof. ' +
  'Disputes: open_dispute, submit_evidence, resolve_dispute (a ruling signed by both parties or the arbiter). ' +
  'get_bundle returns everything needed to check a settlement; verify_bundle checks it offline. Amounts are decimal strings.';

/**
 * One Ajv for every request's Server: the Server validates elicitation answers with it (this server
 * elicits nothing), and building one per request would cost each request a schema compiler.
 */
let validator: AjvJsonSchemaValidator | undefined;

/**
 * tools/call registered under the bare request shape: the Server then checks the params itself and
 * answers a malformed call (arguments that are not an object) with -32602 Invalid params, where the
 * full schema at registration would make it -32603 Internal error.
 */
export const LENIENT_TOOLS_CALL = RequestSchema.extend({ method: CallToolRequestSchema.shape.method });

export function createMcpServer(ctx: Ctx): Server {
  const server = new Server(
    { name: SERVER_NAME, title: 'Escrow settlement', version: VERSION },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: (validator ??= new AjvJsonSchemaValidator()) },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolListings(ctx.routes) }));
  // One server per POST /mcp: the calls of its message (a batch's) take turns to start.
  const turn = turnstile();
  server.setRequestHandler(LENIENT_TOOLS_CALL, async (req) => {
    const { name, arguments: args } = (req as CallToolRequest).params;
    // An unknown tool is a protocol error (MCP "Tools", error handling), not a tool result.
    if (!isTool(name)) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}`);
    await turn();
    return callTool(ctx, name, args);
  });
  return server;
}

/** Answers one POST /mcp whose JSON message has been read. */
export async function answerMcp(ctx: Ctx, message: unknown): Promise<Response> {
  // Stateless: a transport and a server per request, as the SDK requires when no session is kept.
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  const server = createMcpServer(ctx);
  await server.connect(transport);
  try {
    return await transport.handleRequest(ctx.request, { parsedBody: message });
  } finally {
    await server.close();
  }
}
