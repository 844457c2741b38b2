// The local MCP server (`escrow-settlement mcp`) over stdio, driven by the SDK's own Client and
// StdioClientTransport against the service on a socket: a whole matter whose delivery the payee's key
// file signs, a dispute closed by a locally signed co-signature, the key never sent (docs/mcp.md).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { generateKeys } from '@escrow-settlement/client';
import { nodeListener } from '../../src/node/adapter.ts';
import type { App } from '../../src/app.ts';
import { describeStores, makeHarness, type Harness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';
import { ROOT as ROOT_KEY, HOSTED } from '../admin/helpers.ts';
import { ROOT } from '../process/proc.ts';
import { fails, ok } from './helpers.ts';

const BIN = join(ROOT, 'bin/escrow-settlement.mjs');

/** Serves the harness's app on 127.0.0.1:0, keeping every request body it receives. */
async function serve(app: App): Promise<{ url: string; bodies: string[]; server: Server }> {
  const bodies: string[] = [];
  const tapped: App = {
    ...app,
    fetch: async (req, info) => {
      bodies.push(await req.clone().text());
      return app.fetch(req, info);
    },
  };
  const server = createServer(nodeListener(tapped, { trustProxy: false }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, server };
}

async function connectStdio(args: string[], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'escrow-settlement-tests', version: '0.0.0' });
  // The SDK passes the child a minimal environment; coverage runs (c8) also need their directory.
  const coverage: Record<string, string> = process.env.NODE_V8_COVERAGE ? { NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE } : {};
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', ...args],
      cwd: ROOT,
      env: { ...getDefaultEnvironment(), ...coverage, ...env },
      stderr: 'ignore',
    }),
  );
  await client.listTools();
  return client;
}

/** Runs the command to its end: exit code and stderr. */
function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'mcp', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end();
  });
}

const dir = mkdtempSync(join(tmpdir(), 'mcp-stdio-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

describeStores('the local MCP server over stdio', (h) => {
  const payee = generateKeys();
  const keyFile = join(dir, `payee-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(keyFile, JSON.stringify(payee), { mode: 0o600 });
  let service: Awaited<ReturnType<typeof serve>>;
  let client: Client;
  let issuer: string[];

  before(async () => {
    service = await serve(h().app);
    client = await connectStdio(['--url', service.url, '--key-file', keyFile]);
    issuer = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys.map((k: { publicKey: string }) => k.publicKey);
  });
  after(async () => {
    await client?.close();
    await new Promise((resolve) => service?.server.close(resolve));
  });

  const newEscrow = async () => {
    const payer = await ok(client, 'create_agent', { label: 'payer' });
    const e = await ok(client, 'create_escrow', {
      amount: '8',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payee: { publicKey: payee.publicKey, label: 'local payee' },
    });
    await ok(client, 'fund_escrow', { escrowId: e.id });
    return { payer, id: e.id as string };
  };

  test("lists the service's tools, saying which ones it signs", async () => {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 16);
    const delivery = tools.find((t) => t.name === 'submit_delivery')!;
    assert.match(delivery.description!, new RegExp(`signs with the key ${payee.publicKey}`));
    assert.ok(!tools.find((t) => t.name === 'get_escrow')!.description!.includes('signs'));
  });

  test("a whole matter: the payee's delivery signed locally, settled, its bundle verified offline", async () => {
    const { id } = await newEscrow();
    const d = await ok(client, 'submit_delivery', { escrowId: id, payload: { title: 'signed here' } });
    assert.equal(d.delivery.signature.signer, payee.publicKey);
    assert.equal(d.proof.outcome, 'released');
    const bundle = await ok(client, 'get_bundle', { proofId: d.proof.id });
    assert.ok(
      bundle.parties.signatures.some((s: { kind: string; publicKey: string }) => s.kind === 'delivery' && s.publicKey === payee.publicKey),
    );
    const before = service.bodies.length;
    const v = await ok(client, 'verify_bundle', { bundle, trustedKeys: issuer });
    assert.equal(v.valid, true, JSON.stringify(v.checks.filter((c: { ok: boolean }) => !c.ok)));
    assert.equal(service.bodies.length, before, 'verify_bundle sent nothing to the service');
    // A refund after release, signed here with the payee's key (docs/protocol.md §24.4).
    const refund = await ok(client, 'refund_after_release', { escrowId: id, amount: '0.5', reason: 'goodwill' });
    assert.equal(refund.refund.by, payee.publicKey);
    assert.equal(refund.proof.outcome, 'refunded-after-release');
    const forged = structuredClone(bundle);
    forged.trail[0].body = { forged: true };
    assert.equal((await ok(client, 'verify_bundle', { bundle: forged, trustedKeys: issuer })).valid, false);
    assert.match(await fails(client, 'verify_bundle', { bundle, colour: 'red' }, 'bad_request'), /colour/);
    // The local server refuses by default too: no pinned key, no valid.
    const unpinned = await ok(client, 'verify_bundle', { bundle });
    assert.equal(unpinned.valid, false);
    assert.equal(unpinned.checks.find((c: { name: string }) => c.name === 'issuer.trust').ok, false);
    assert.equal((await ok(client, 'verify_bundle', { bundle, trustBundleKeys: true })).valid, true);
  });

  test('a dispute opened and argued by the local key, closed by its co-signature with the payer agent', async () => {
    const { payer, id } = await newEscrow();
    const failed = await ok(client, 'submit_delivery', { escrowId: id, payload: { body: 'no title' } });
    assert.equal(failed.verdict.passed, false);
    const opened = await ok(client, 'open_dispute', { escrowId: id, reason: 'the title is in the body' });
    assert.equal(opened.openedBy, payee.publicKey);
    const ev = await ok(client, 'submit_evidence', { escrowId: id, note: 'see the body', payload: { page: 1 } });
    assert.equal(ev.evidence.at(-1).party, payee.publicKey);
    const r = await ok(client, 'resolve_dispute', {
      escrowId: id,
      outcome: 'split',
      shares: { payerBps: 5000, payeeBps: 5000 },
      rationale: 'both partly right',
      agentIds: [payer.id],
    });
    assert.equal(r.dispute.ruling.decidedBy, 'co-signature');
    assert.equal(r.proof.outcome, 'split');
    const bundle = await ok(client, 'get_bundle', { proofId: r.proof.id });
    const kinds = bundle.parties.signatures
      .filter((s: { publicKey: string }) => s.publicKey === payee.publicKey)
      .map((s: { kind: string }) => s.kind)
      .sort();
    assert.deepEqual(kinds, ['delivery', 'dispute.evidence', 'dispute.open', 'ruling']);
    assert.equal((await ok(client, 'verify_bundle', { bundle, trustedKeys: issuer })).valid, true);
    // A sandbox-agent form is sent as the model chose it: the payer agent opens, not the local key.
    const e2 = await newEscrow();
    await ok(client, 'submit_delivery', { escrowId: e2.id, payload: { body: 'no title' } });
    const byAgent = await ok(client, 'open_dispute', { escrowId: e2.id, agentId: e2.payer.id, reason: 'no title' });
    assert.equal(byAgent.openedBy, e2.payer.publicKey);
  });

  test('the secret key never left this machine', () => {
    assert.ok(service.bodies.length > 10);
    assert.ok(service.bodies.every((b) => !b.includes(payee.secretKey)));
    assert.ok(service.bodies.some((b) => b.includes(payee.publicKey)));
  });
});

test('hosted: the API key comes from --api-key or the environment; without one the command exits 1 naming the refusal', async () => {
  const h: Harness = await makeHarness('pglite', HOSTED);
  const service = await serve(h.app);
  try {
    const refused = await run(['--url', service.url]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /unauthorized/);
    const client = await connectStdio(['--url', service.url], { ESCROW_SETTLEMENT_API_KEY: ROOT_KEY });
    assert.deepEqual((await ok(client, 'list_escrows', {})).escrows, []);
    await client.close();
  } finally {
    await new Promise((resolve) => service.server.close(resolve));
    await h.close();
  }
});

test('usage errors exit 2 naming the problem', async () => {
  const bad = join(dir, 'bad-key.json');
  writeFileSync(bad, JSON.stringify({ secretKey: 'zz' }));
  const mismatched = join(dir, 'mismatched-key.json');
  writeFileSync(mismatched, JSON.stringify({ secretKey: generateKeys().secretKey, publicKey: generateKeys().publicKey }));
  for (const [args, why] of [
    [[], /missing --url/],
    [['--url', 'ftp://x'], /http: or https:/],
    [['--url', 'http://127.0.0.1:1', '--key-file', bad], /secretKey must be 64/],
    [['--url', 'http://127.0.0.1:1', '--key-file', mismatched], /publicKey is not the public key/],
    [['--url', 'http://127.0.0.1:1', '--key-file', join(dir, 'absent.json')], /ENOENT/],
    [['--url', 'http://127.0.0.1:1', '--verbose'], /unknown option --verbose/],
  ] as Array<[string[], RegExp]>) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why);
  }
  const unreachable = await run(['--url', 'http://127.0.0.1:1']);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /cannot reach the MCP endpoint/);
});
