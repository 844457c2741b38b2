// The tools' schemas as an MCP client reads them (tools/list through the SDK's Client): every array
// names the type of its items, at every depth of every input and output schema, $defs included (clients
// that convert typed-in arguments, and model APIs that check schemas, need it: docs/mcp.md "Tools");
// and the bundle's party signature kinds are every kind the service emits.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { PARTY_SIGNATURE_KINDS } from '@escrow-settlement/protocol/types';
import { makeHarness, type Harness } from '../harness.ts';
import { connectHttp } from './helpers.ts';

let h: Harness;
let client: Client;
let tools: Awaited<ReturnType<Client['listTools']>>['tools'];

before(async () => {
  h = await makeHarness('pglite');
  client = await connectHttp(h);
  tools = (await client.listTools()).tools;
});
after(async () => {
  await client?.close();
  await h?.close();
});

/** Every place in `schema` where an array's items are not typed, as a JSON pointer. */
function untypedItems(schema: unknown, at = ''): string[] {
  if (Array.isArray(schema)) return schema.flatMap((s, i) => untypedItems(s, `${at}/${i}`));
  if (schema === null || typeof schema !== 'object') return [];
  const node = schema as Record<string, unknown>;
  const out: string[] = [];
  const isArray = node.type === 'array' || (Array.isArray(node.type) && node.type.includes('array'));
  if (isArray || 'items' in node) {
    const items = node.items as Record<string, unknown> | undefined;
    if (!items || typeof items !== 'object' || items.type === undefined) out.push(`${at}/items`);
  }
  for (const [k, v] of Object.entries(node)) out.push(...untypedItems(v, `${at}/${k}`));
  return out;
}

test('every array in every tool input and output schema has items with a type', () => {
  assert.ok(tools.length >= 14, String(tools.length));
  const missing = tools.flatMap((t) => [
    ...untypedItems(t.inputSchema).map((p) => `${t.name} input ${p}`),
    ...untypedItems(t.outputSchema).map((p) => `${t.name} output ${p}`),
  ]);
  assert.deepEqual(missing, []);
});

test('the walker finds an untyped array: it is not a test that cannot fail', () => {
  assert.deepEqual(untypedItems({ properties: { a: { type: 'array', items: { $ref: '#/$defs/X' } }, b: { type: 'array' } } }), [
    '/properties/a/items',
    '/properties/b/items',
  ]);
});

test("get_bundle's output schema lists every party signature kind the service emits (ap2 included)", () => {
  const bundle = tools.find((t) => t.name === 'get_bundle')!.outputSchema as any;
  const success = bundle.anyOf[0];
  const kinds = success.properties.parties.properties.signatures.items.properties.kind.enum;
  assert.deepEqual([...kinds].sort(), [...PARTY_SIGNATURE_KINDS].sort());
  assert.ok(kinds.includes('ap2'));
});

test('verify_bundle takes ap2Issuers, a JWKS, as the REST client and the CLI verifiers do', () => {
  const input = tools.find((t) => t.name === 'verify_bundle')!.inputSchema as any;
  assert.equal(input.properties.ap2Issuers.type, 'object');
  assert.deepEqual(input.properties.ap2Issuers.required, ['keys']);
  assert.equal(input.properties.ap2Issuers.properties.keys.items.type, 'object');
});
