// Every tool can be called by a client that converts typed-in arguments by their schema's `type`, as
// the official MCP Inspector does (docs/mcp.md "Tools"): once with the Inspector's own conversion
// applied in-process to every argument typed as text, and once with the Inspector CLI itself
// (`@modelcontextprotocol/inspector`, which needs Node 22) against a started service, when
// INSPECTOR_DIR names a directory where `npm i --no-save node@22 @modelcontextprotocol/inspector` ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { makeHarness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { startService, TSX } from '../process/proc.ts';
import { connectHttp } from './helpers.ts';

type Call = (name: string, args: Record<string, unknown>) => Promise<{ isError: boolean; body: any }>;

/**
 * The Inspector's conversion of a value typed as text (its `convertParameterValue`, the same in the
 * CLI and the web form): number and integer by Number(), boolean by "true", object and array by
 * JSON.parse, anything else, an untyped property included, sent as the string typed.
 */
function convertLikeInspector(text: string, schema: { type?: unknown } | undefined): unknown {
  if (!text || !schema) return text;
  if (schema.type === 'number' || schema.type === 'integer') return Number(text);
  if (schema.type === 'boolean') return text.toLowerCase() === 'true';
  if (schema.type === 'object' || schema.type === 'array') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

const asText = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** Calls every tool once, in an order that makes each call meaningful; returns the tools called. */
async function everyTool(call: Call): Promise<string[]> {
  const called: string[] = [];
  const ok = async (name: string, args: Record<string, unknown>) => {
    const r = await call(name, args);
    called.push(name);
    assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.body).slice(0, 400)}`);
    return r.body;
  };
  const payer = await ok('create_agent', { label: 'payer' });
  const payee = await ok('create_agent', { label: 'payee' });
  const arbiter = await ok('create_agent', { label: 'arbiter' });
  const escrow = (over: Record<string, unknown> = {}) =>
    ok('create_escrow', { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id, ...over });
  const settled = await escrow();
  await ok('fund_escrow', { escrowId: settled.id });
  const delivered = await ok('submit_delivery', { escrowId: settled.id, agentId: payee.id, payload: { title: 'the report' } });
  const proof = delivered.proof ?? (await ok('get_escrow', { escrowId: settled.id })).proof;
  await ok('request_refund', { escrowId: settled.id, amount: '1', reason: 'late', agentIds: [payer.id] });
  await ok('refund_after_release', { escrowId: settled.id, amount: '1', agentIds: [payee.id] });
  const refunded = await escrow();
  await ok('fund_escrow', { escrowId: refunded.id });
  await ok('refund_escrow', { escrowId: refunded.id });
  const disputed = await escrow({ arbiterAgentId: arbiter.id });
  await ok('fund_escrow', { escrowId: disputed.id });
  await ok('submit_delivery', { escrowId: disputed.id, agentId: payee.id, payload: { body: 'no title' } });
  await ok('open_dispute', { escrowId: disputed.id, agentId: payer.id, reason: 'no title' });
  await ok('submit_evidence', { escrowId: disputed.id, agentId: payee.id, note: 'see the body', payload: { body: 'no title' } });
  await ok('resolve_dispute', {
    escrowId: disputed.id,
    outcome: 'split',
    shares: { payerBps: 4000, payeeBps: 6000 },
    agentIds: [arbiter.id],
    rationale: 'half done',
  });
  await ok('get_escrow', { escrowId: disputed.id });
  await ok('list_escrows', { state: 'resolved', limit: 10 });
  const proofId = typeof proof === 'string' ? proof : (proof?.id ?? (await ok('get_escrow', { escrowId: settled.id })).proofId);
  await ok('get_proof', { proofId });
  const bundle = await ok('get_bundle', { proofId });
  await ok('get_log_checkpoint', {});
  const verified = await ok('verify_bundle', { bundle });
  assert.equal(typeof verified.valid, 'boolean');
  return called;
}

test("every tool is callable with its arguments typed as text and converted by their schema's type, as the MCP Inspector does", async () => {
  const h = await makeHarness('pglite');
  let client: Client | undefined;
  try {
    client = await connectHttp(h);
    const tools = new Map<string, Tool>((await client.listTools()).tools.map((t) => [t.name, t]));
    const call: Call = async (name, args) => {
      const props = (tools.get(name)!.inputSchema.properties ?? {}) as Record<string, { type?: unknown }>;
      const converted = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, convertLikeInspector(asText(v), props[k])]));
      const r = (await client!.callTool({ name, arguments: converted })) as CallToolResult;
      return { isError: r.isError === true, body: r.structuredContent };
    };
    const called = await everyTool(call);
    assert.deepEqual([...new Set(called)].sort(), [...tools.keys()].sort(), 'every tool was called');
  } finally {
    await client?.close();
    await h.close();
  }
});

const INSPECTOR_DIR = process.env.INSPECTOR_DIR;
const inspectorCli = INSPECTOR_DIR && join(INSPECTOR_DIR, 'node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js');
const node22 = INSPECTOR_DIR && join(INSPECTOR_DIR, 'node_modules/.bin/node');

test('the MCP Inspector CLI calls every tool of a started service', {
  timeout: 600_000,
  skip:
    inspectorCli && existsSync(inspectorCli) && existsSync(node22!)
      ? false
      : 'set INSPECTOR_DIR to a directory where `npm i --no-save node@22 @modelcontextprotocol/inspector` ran',
}, async () => {
  const proc = await startService(TSX, { DATA_DIR: ':memory:' }, 90_000);
  try {
    const url = `${proc.url}/mcp`;
    // `--tool-arg key=value`: the CLI parses each value as JSON when it can (so a string that would
    // parse, like "3", is given quoted), then converts the strings left by the tool's schema.
    const cliText = (v: unknown) => {
      if (typeof v !== 'string') return JSON.stringify(v);
      try {
        JSON.parse(v);
        return JSON.stringify(v);
      } catch {
        return v;
      }
    };
    const call: Call = (name, args) =>
      new Promise((resolve, reject) => {
        const argv = [inspectorCli!, url, '--transport', 'http', '--method', 'tools/call', '--tool-name', name];
        for (const [k, v] of Object.entries(args)) argv.push('--tool-arg', `${k}=${cliText(v)}`);
        execFile(node22!, argv, { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
          const out = stdout.trim();
          if (!out.startsWith('{')) return reject(new Error(`inspector ${name}: ${err?.message ?? ''} ${stderr} ${out}`.slice(0, 2000)));
          const r = JSON.parse(out) as CallToolResult;
          resolve({ isError: r.isError === true, body: r.structuredContent ?? r });
        });
      });
    const called = await everyTool(call);
    assert.equal(new Set(called).size, 14, `tools called: ${[...new Set(called)].join(', ')}`);
  } finally {
    await proc.stop();
  }
});
