// A tool call as the REST request it stands for, sent through the service's own front door
// (ctx.refetch): cross-site and Host checks, the caller's key, tenancy, rate limits, body caps and the
// route's validation all apply exactly as to the REST call. The answer is the route's: its body is the
// result's structuredContent, its error envelope an isError result's (docs/mcp.md).
import type { Ctx } from '../http/route.ts';
import { badRequest } from '../errors.ts';
import { errorResponse } from '../http/respond.ts';
import { spend } from '../http/rateLimit.ts';
import { ROUTE_TOOLS, VERIFY_BUNDLE_TOOL, type RouteTool } from './tools.ts';
import { pathArgPattern } from './schemas.ts';
import { runVerifyBundle, ToolArgumentError } from '@escrow-settlement/protocol/mcp/verifyBundleTool';

export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

/** Runs `fn` on the next turn of the event loop: setImmediate where there is one (Node), else a zero timeout (Deno). */
const onNextTurn = (fn: () => void): void => {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (immediate) immediate(fn);
  else setTimeout(fn, 0);
};

/** Calls waiting for their turn, across every MCP request of this process, in the order they asked. */
const waiting: Array<() => void> = [];
let pumping = false;

/**
 * Calls that start in one turn of the event loop, process-wide. One: measured with 16 batches of 100
 * calls beside a health probe (test/reliability/mcp-batch.rel.ts, shared 2-core machine), one per turn
 * kept the probe's median below the REST yardstick's (46 ms against 92) where four did not (107 against
 * 46); the batches took 39.7 s against REST's 15.5 s (four: 29.9 s against 24.4 s).
 */
export const CALLS_PER_TURN = 1;

/** Lets the first waiting calls start, then comes back on the next turn for the next ones. */
function pump(): void {
  if (waiting.length === 0) {
    pumping = false;
    return;
  }
  for (const next of waiting.splice(0, CALLS_PER_TURN)) next();
  onNextTurn(pump);
}

/** Resolves on a later turn of the event loop: at most CALLS_PER_TURN waiting calls start per turn, process-wide. */
export function ownTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!pumping) {
      pumping = true;
      onNextTurn(pump);
    }
  });
}

/**
 * The calls of one MCP message take turns to start (docs/security.md "MCP batches count call by call,
 * and take turns"): the SDK hands every call of a batch over at once, and on the embedded store a
 * call's work is promise callbacks in the service's thread, so 100 calls started together ran as one
 * task in which no other client's socket was read. A message's first call starts at once; each further
 * call asks for a turn of its own once the previous one has started, so the waiting calls of all
 * messages start a few per turn of the event loop (CALLS_PER_TURN), taking turns message by message, and other clients'
 * requests are read and answered between them. Calls still overlap, under the client's concurrency cap.
 */
export function turnstile(): () => Promise<void> {
  let last: Promise<void> | null = null;
  return () => {
    const mine: Promise<void> = last === null ? Promise.resolve() : last.then(ownTurn);
    last = mine;
    return mine;
  };
}

/** Request headers a tool call's request carries over from the MCP request (the rest are the tool's). */
const CARRIED = ['authorization', 'host', 'origin', 'sec-fetch-site', 'sec-fetch-mode', 'user-agent'];

const BY_NAME = new Map(ROUTE_TOOLS.map((t) => [t.name, t]));

export const isTool = (name: string) => BY_NAME.has(name) || name === VERIFY_BUNDLE_TOOL.name;

export async function callTool(ctx: Ctx, name: string, args: Record<string, unknown> | undefined): Promise<ToolResult> {
  try {
    if (name === VERIFY_BUNDLE_TOOL.name) return await verifyTool(ctx, args);
    const tool = BY_NAME.get(name);
    if (!tool) throw new Error(`unknown tool ${name}`);
    return await fromResponse(tool, await ctx.refetch!(toRequest(ctx, tool, args ?? {})));
  } catch (err) {
    return fromResponse(undefined, errorResponse(err));
  }
}

/** The REST request of a tool call: the path argument in the path, the others in the query or the body. */
function toRequest(ctx: Ctx, tool: RouteTool, args: Record<string, unknown>): Request {
  const [method, pattern] = tool.route.split(' ');
  const rest = { ...args };
  let path = pattern;
  if (tool.pathArg) {
    const v = rest[tool.pathArg.name];
    if (v === undefined) throw badRequest(`${tool.pathArg.name} is required`);
    // Only a well-formed id of its kind becomes the path segment: `.`, `..`, `/`, `?`, `#` or `%` would
    // make the request another route's (the list, the proof's bundle) or another resource.
    if (typeof v !== 'string' || !new RegExp(pathArgPattern(tool.pathArg)).test(v))
      throw badRequest(
        `${tool.pathArg.name}: must be an id of the form ${tool.pathArg.prefix}_… (letters, digits, _ or -), ${tool.pathArg.description}`,
      );
    delete rest[tool.pathArg.name];
    path = pattern.replace(':id', v);
  }
  const url = new URL(path, ctx.request.url);
  if (method === 'GET') {
    for (const [k, v] of Object.entries(rest)) {
      if (!tool.query?.includes(k))
        throw badRequest(
          `${k}: unknown argument; ${tool.name} takes ${[tool.pathArg?.name, ...(tool.query ?? [])].filter(Boolean).join(', ') || 'no arguments'}`,
        );
      if (typeof v !== 'string' && typeof v !== 'number')
        throw badRequest(`${k}: must be a string${k === 'limit' ? ' or an integer' : ''}`);
      url.searchParams.set(k, String(v));
    }
  }
  const headers = new Headers({ accept: 'application/json' });
  for (const h of CARRIED) {
    const v = ctx.request.headers.get(h);
    if (v !== null) headers.set(h, v);
  }
  let body: string | undefined;
  if (method !== 'GET' && Object.keys(rest).length > 0) {
    body = JSON.stringify(rest);
    headers.set('content-type', 'application/json');
  }
  return new Request(url, { method, headers, body });
}

/** The route's answer as a tool result: JSON as is, a text answer wrapped, an error envelope as isError. */
async function fromResponse(tool: RouteTool | undefined, res: Response): Promise<ToolResult> {
  const text = await res.text();
  const isJson = (res.headers.get('content-type') ?? '').startsWith('application/json');
  let structured: Record<string, unknown>;
  if (res.ok && tool?.textAs && !isJson) structured = { [tool.textAs]: text };
  else
    structured = isJson
      ? JSON.parse(text)
      : {
          error: {
            code: 'internal',
            message: `the route answered ${res.status} with ${res.headers.get('content-type') ?? 'no content type'}`,
          },
        };
  return {
    content: [{ type: 'text', text: tool?.textAs && res.ok ? text : JSON.stringify(structured) }],
    structuredContent: structured,
    ...(res.ok ? {} : { isError: true }),
  };
}

/**
 * verify_bundle runs here, on the bundle given, with no request to anything. It is the work
 * POST /v1/verify does, so it spends the same per-address verify budget.
 */
async function verifyTool(ctx: Ctx, args: Record<string, unknown> | undefined): Promise<ToolResult> {
  const { svc, caller } = ctx;
  await spend(svc.rateLimiter, { unit: `verify:${caller.ip}`, limit: svc.config.verifyRateLimitMax });
  let answer: ReturnType<typeof runVerifyBundle>;
  try {
    answer = runVerifyBundle(args);
  } catch (err) {
    if (err instanceof ToolArgumentError || err instanceof TypeError) throw badRequest(err.message);
    throw err;
  }
  return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer as unknown as Record<string, unknown> };
}
