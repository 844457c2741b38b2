// What the OpenAPI document says of POST /mcp beyond the route table: the transport's own refusals,
// which are JSON-RPC 2.0 error answers (MCP Streamable HTTP), not the service's error envelope.
const rpcError = (description: string) => ({
  description,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: {
          jsonrpc: { const: '2.0' },
          error: { type: 'object', properties: { code: { type: 'integer' }, message: { type: 'string' } }, required: ['code', 'message'] },
          id: { type: 'null' },
        },
        required: ['jsonrpc', 'error', 'id'],
      },
    },
  },
});

export const MCP_TRANSPORT_RESPONSES: Record<string, unknown> = {
  400: rpcError(
    'JSON-RPC error: -32700 for a body that is not JSON (or breaks the I-JSON rules) or not a JSON-RPC message, -32600 for an empty batch.',
  ),
  406: rpcError('JSON-RPC error: the Accept header must list both application/json and text/event-stream.'),
  413: rpcError(
    "JSON-RPC error -32600: the message is over 2 MB. (A tool call whose arguments are over its route's body cap is an isError result with the payload_too_large envelope.)",
  ),
  415: rpcError('JSON-RPC error: Content-Type must be application/json.'),
};
