// The local MCP server (the service's MCP documentation): the service's own tools, served to a local MCP host (over stdio),
// relayed to the service's /mcp. The tool table is the service's: this server lists what the service
// lists and forwards each call, except that it verifies bundles itself (offline: no request leaves the
// machine) and, with a party's key file, signs deliveries, dispute actions and rulings before sending.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, RequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolRequest, CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createClient } from '../api.ts';
import { ApiError, type FetchLike } from '../http.ts';
import { runVerifyBundle, ToolArgumentError } from './verifyBundleTool.ts';
import { signArguments, SIGNING_TOOLS, type LocalKey } from './signing.ts';

export interface LocalServerOptions {
  /** The service, e.g. "https://escrow.example.com" (its /mcp is where calls go). */
  url: string;
  /** Bearer key of a hosted deployment. */
  apiKey?: string;
  /** A party's key: its signatures are made here. */
  key?: LocalKey;
  /** fetch for the service (tests); default the global fetch. */
  fetch?: FetchLike;
  version?: string;
}

/** The envelope an isError result carries, as the service writes it. */
const envelope = (code: string, message: string, url: string): CallToolResult => {
  const structuredContent = { error: { code, message, docsUrl: new URL(`/docs/errors#${code}`, url).href } };
  return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent, isError: true };
};

/**
 * tools/call registered under the bare request shape: the Server checks the params itself and answers
 * a malformed call with -32602 Invalid params (the full schema here would make it -32603).
 */
const LENIENT_TOOLS_CALL = RequestSchema.extend({ method: CallToolRequestSchema.shape.method });

/** Connects to the service's /mcp, then serves its tools on `transport` (a StdioServerTransport for the CLI). */
export async function startLocalServer(
  opts: LocalServerOptions,
  transport: Transport,
): Promise<{ server: Server; close: () => Promise<void> }> {
  const base = opts.url.endsWith('/') ? opts.url : `${opts.url}/`;
  const headers: Record<string, string> = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};
  const fetchFn = opts.fetch;
  const upstream = new Client({ name: 'escrow-settlement-local', version: opts.version ?? '0' });
  await upstream.connect(
    new StreamableHTTPClientTransport(new URL('mcp', base), {
      requestInit: { headers },
      ...(fetchFn ? { fetch: (u: string | URL, init?: RequestInit) => fetchFn(new Request(u, init)) } : {}),
    }),
  );
  const rest = createClient({ baseUrl: opts.url, apiKey: opts.apiKey, ...(fetchFn ? { fetch: fetchFn } : {}) });
  const remote = upstream.getServerVersion();
  const server = new Server(
    { name: remote?.name ?? 'escrow-settlement', version: remote?.version ?? '0', title: 'Escrow settlement (local)' },
    { capabilities: { tools: {} }, ...(upstream.getInstructions() ? { instructions: upstream.getInstructions() } : {}) },
  );

  let tools: Tool[] | undefined;
  const listTools = async () => (tools ??= (await upstream.listTools()).tools.map((t) => describeLocal(t, opts.key)));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await listTools() }));
  server.setRequestHandler(LENIENT_TOOLS_CALL, async (req): Promise<CallToolResult> => {
    const { name, arguments: given } = (req as CallToolRequest).params;
    const args = given ?? {};
    if (!(await listTools()).some((t) => t.name === name))
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}`);
    if (name === 'verify_bundle') {
      try {
        const answer = runVerifyBundle(args);
        return {
          content: [{ type: 'text', text: JSON.stringify(answer) }],
          structuredContent: answer as unknown as Record<string, unknown>,
        };
      } catch (err) {
        if (err instanceof ToolArgumentError || err instanceof TypeError) return envelope('bad_request', err.message, opts.url);
        throw err;
      }
    }
    let sent = args;
    if (opts.key) {
      try {
        // Signed with the service's clock (the API client's offset), which a sandbox may have moved on.
        sent = await signArguments(name, args, opts.key, async (escrowId) => (await rest.disputes.get(escrowId)).id, rest.clock.now);
      } catch (err) {
        // The dispute a ruling names could not be read: the service's answer, as the tool's.
        if (err instanceof ApiError) return envelope(err.code, err.message, opts.url);
        throw err;
      }
    }
    return (await upstream.callTool({ name, arguments: sent })) as CallToolResult;
  });
  await server.connect(transport);
  return {
    server,
    close: async () => {
      await server.close();
      await upstream.close();
    },
  };
}

/** A tool as this server lists it: with a key, the signing tools say what the model may leave out. */
function describeLocal(t: Tool, key: LocalKey | undefined): Tool {
  const note = key ? SIGNING_TOOLS[t.name] : undefined;
  if (note === undefined) return t;
  return { ...t, description: `${t.description} This local server signs with the key ${key!.publicKey}: ${note}.` };
}
