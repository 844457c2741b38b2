// The SDK's own Client connected to the service's /mcp through app.fetch (no socket), as an MCP host
// would connect over HTTP; and the helpers the MCP tests share.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Harness } from '../harness.ts';

export const BASE = 'http://test.local';

/** A connected Client; `headers` go on every request (Authorization for hosted mode). */
export async function connectHttp(h: Harness, headers: Record<string, string> = {}, ip = '127.0.0.1'): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
    requestInit: { headers },
    fetch: (url, init) => h.app.fetch(new Request(url, init), { ip }),
  });
  const client = new Client({ name: 'escrow-settlement-tests', version: '0.0.0' });
  await client.connect(transport);
  // Listing the tools makes the Client check every structuredContent against its tool's outputSchema.
  await client.listTools();
  return client;
}

/** A tool call that must succeed: its structuredContent. */
export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.ok(!r.isError, `${name}: ${JSON.stringify(r.structuredContent)}`);
  // The text content says what structuredContent says (MCP: for clients that read only text).
  const text = (r.content[0] as { text: string }).text;
  if (name === 'get_log_checkpoint') assert.equal(text, (r.structuredContent as { checkpoint: string }).checkpoint);
  else assert.deepEqual(JSON.parse(text), r.structuredContent);
  return r.structuredContent;
}

/** A tool call that must fail with the envelope's code; returns the envelope's message. */
export async function fails(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<string> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r.structuredContent)}`);
  const env = r.structuredContent as { error: { code: string; message: string } };
  assert.equal(env.error.code, code, env.error.message);
  return env.error.message;
}
