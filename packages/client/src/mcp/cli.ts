// `escrow-settlement mcp --url <service> [--api-key K] [--key-file F]`: the local MCP server over stdio
// (the service's MCP documentation). stdout carries the protocol alone; anything for a person goes to stderr.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { startLocalServer } from './localServer.ts';
import { readKeyFile, type LocalKey } from './signing.ts';

export const MCP_USAGE = `usage: escrow-settlement mcp --url <service URL> [--api-key KEY] [--key-file FILE]

Serves the service's MCP tools to a local MCP host over stdio, relaying each call to <service>/mcp.
verify_bundle runs here, with no network. With --key-file (JSON {secretKey} or the 64-hex secret key),
deliveries, dispute actions and rulings are signed here, so the key never leaves this machine.
--api-key may instead come from ESCROW_SETTLEMENT_API_KEY, which keeps it out of the process list.`;

interface Io {
  err: (line: string) => void;
}

interface McpArgs {
  url: string;
  apiKey?: string;
  key?: LocalKey;
}

function parse(argv: string[], env: Record<string, string | undefined>): McpArgs | string {
  const out: Partial<McpArgs> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = argv[i + 1];
    if (a !== '--url' && a !== '--api-key' && a !== '--key-file') return `unknown option ${a}`;
    if (value === undefined || value.startsWith('--')) return `${a} needs a value`;
    i++;
    if (a === '--url') {
      let u: URL;
      try {
        u = new URL(value);
      } catch {
        return `--url ${value}: not an absolute URL`;
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return `--url ${value}: must be http: or https:`;
      out.url = value;
    } else if (a === '--api-key') {
      out.apiKey = value;
    } else {
      try {
        out.key = readKeyFile(value);
      } catch (e) {
        return (e as Error).message;
      }
    }
  }
  if (!out.url) return 'missing --url';
  const apiKey = out.apiKey ?? env.ESCROW_SETTLEMENT_API_KEY;
  return { url: out.url, ...(apiKey ? { apiKey } : {}), ...(out.key ? { key: out.key } : {}) };
}

/** Runs until the host closes stdin; the exit code: 0, 1 when the service cannot be reached, 2 on a usage error. */
export async function mcpMain(argv: string[], io: Io, env: Record<string, string | undefined> = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.err(MCP_USAGE);
    return 0;
  }
  const args = parse(argv, env);
  if (typeof args === 'string') {
    io.err(`escrow-settlement mcp: ${args}\n${MCP_USAGE}`);
    return 2;
  }
  const transport = new StdioServerTransport();
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  try {
    local = await startLocalServer(args, transport);
  } catch (e) {
    io.err(`escrow-settlement mcp: cannot reach the MCP endpoint of ${args.url}: ${(e as Error).message}`);
    return 1;
  }
  io.err(`escrow-settlement mcp: serving ${args.url}/mcp over stdio${args.key ? `, signing as ${args.key.publicKey}` : ''}`);
  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await local.close();
  return 0;
}
