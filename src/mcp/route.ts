// POST /mcp: the Model Context Protocol over Streamable HTTP, stateless, with the SDK's web-standard
// transport answering in JSON (docs/mcp.md). The request has passed the front door's cross-site, Host
// and key checks like any route; each tool call then goes through it again as its REST request.
// GET and DELETE (the SSE stream and session end of stateful servers) are 405 like any unserved method.
import { defineRoutes, type Ctx } from '../http/route.ts';
import { MAX_BODY, readBytes } from '../http/body.ts';
import { parseStrictJson } from '../http/strictJson.ts';
import { AppError } from '../errors.ts';

/**
 * The cap of one MCP message: above the REST body cap, so a tool call whose arguments are over the
 * route's cap reaches the route and is refused as the REST request is (an isError result with the
 * payload_too_large envelope); a message over this is refused before it is read.
 */
export const MAX_MCP_MESSAGE = 2 * MAX_BODY;

/** JSON-RPC 2.0 error answer (id null: the request could not be read, so its id is unknown). */
function rpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/** The message, parsed with the REST bodies' I-JSON rules; a JSON-RPC error Response when it cannot be. */
async function readMessage(request: Request): Promise<unknown | Response> {
  let bytes: Uint8Array;
  try {
    bytes = await readBytes(request, MAX_MCP_MESSAGE);
  } catch (err) {
    if (err instanceof AppError && err.code === 'payload_too_large')
      return rpcError(413, -32600, `Invalid Request: the message is over the ${MAX_MCP_MESSAGE / 1024 / 1024} MB limit`);
    return rpcError(400, -32700, 'Parse error: the request body could not be read');
  }
  if (bytes.byteLength === 0) return rpcError(400, -32700, 'Parse error: empty body; send a JSON-RPC 2.0 message');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return rpcError(400, -32700, 'Parse error: the body is not valid UTF-8');
  }
  let message: unknown;
  try {
    message = parseStrictJson(text);
  } catch (err) {
    return rpcError(400, -32700, `Parse error: ${err instanceof AppError ? err.message : 'invalid JSON'}`);
  }
  // JSON-RPC 2.0 §6: an empty batch is an invalid request (the transport would take it for notifications).
  if (Array.isArray(message) && message.length === 0) return rpcError(400, -32600, 'Invalid Request: an empty batch');
  return message;
}

async function handle(ctx: Ctx): Promise<Response> {
  const message = await readMessage(ctx.request);
  if (message instanceof Response) return message;
  // The SDK is loaded at the first MCP request, so a service nobody asks for MCP keeps its start-up
  // time and idle memory (the bundle initialises a module when it is first imported).
  const { answerMcp } = await import('./server.ts');
  return answerMcp(ctx, message);
}

export const mcpRoutes = defineRoutes({ tag: 'mcp', access: 'key' }, [
  {
    route: 'POST /mcp',
    summary:
      'Model Context Protocol (Streamable HTTP, stateless, JSON responses): the escrow tools for LLM agents. Send Accept: application/json, text/event-stream. A malformed message gets a JSON-RPC error; each tools/call runs its REST route as the caller, with its rate limit (docs/mcp.md).',
    success: { status: 200, description: 'a JSON-RPC 2.0 response; 202 with no body for a notification' },
    // 429: the failed-authentication budget of the address; tool calls' own budgets answer inside results.
    errors: ['unauthorized', 'rate_limited'],
    handler: handle,
  },
]);
