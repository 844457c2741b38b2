import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020.js';
import { makeHarness, expectError } from '../harness.ts';
import { RESPONSES } from '../../src/openapi/components.ts';
import { openApiDocument } from '../../src/openapi/document.ts';
import { toJsonSchema } from '../../src/openapi/jsonSchema.ts';
import { validate as ssValidate } from 'superstruct';
import { CreateEscrowBody } from '../../src/routes/escrows.ts';
import { ResolveBody } from '../../src/routes/disputes.ts';
import { MCP_TRANSPORT_RESPONSES } from '../../src/openapi/mcp.ts';

const h = await makeHarness('pglite');
const doc = (await h.req('GET', '/v1/openapi.json')).body;
test.after(() => h.close());

test('the document is OpenAPI 3.1 with info.version 0.5.0 and validates against the OpenAPI 3.1 schema', async () => {
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '0.5.0');
  const v = new Validator();
  const res = await v.validate(doc);
  assert.equal(res.valid, true, JSON.stringify(res.errors, null, 1)?.slice(0, 3000));
  assert.equal(v.version, '3.1');
});

test('the document lists exactly the routes the router serves, no more and no fewer', () => {
  const served = h.app.routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)\+?/g, '{$1}')}`).sort();
  const documented = Object.entries(doc.paths)
    .flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${p}`))
    .sort();
  assert.deepEqual(documented, served);
});

test('every operation has a success schema, an error envelope for each of its codes, and the right security', () => {
  for (const r of h.app.routes) {
    assert.ok(RESPONSES[`${r.method} ${r.path}`], `no response schema for ${r.method} ${r.path}`);
    const op = doc.paths[r.path.replace(/:(\w+)\+?/g, '{$1}')][r.method.toLowerCase()];
    assert.deepEqual(op.security, r.access === 'public' ? [] : [{ bearer: [] }], r.path);
    for (const [status, resp] of Object.entries(op.responses) as Array<[string, any]>) {
      // /health's 503 is its own body with ok false (docs/protocol.md §22), not the error envelope; /mcp's
      // transport refusals are JSON-RPC errors (src/openapi/mcp.ts).
      if (r.path === '/mcp' && status in MCP_TRANSPORT_RESPONSES) continue;
      if (Number(status) >= 400 && !(r.path === '/health' && status === '503'))
        assert.equal(resp.content['application/json'].schema.$ref, '#/components/schemas/Error');
    }
    if (r.access !== 'public') assert.ok(op.responses['401'], `${r.path} documents 401`);
  }
});

test('request schemas come from the validating structs: a body the schema accepts, the route accepts, and unknown fields are refused by both', () => {
  const ajv = new Ajv2020({ strict: false });
  const schema = { ...toJsonSchema(CreateEscrowBody), $defs: undefined };
  const body = { amount: '5', asset: 'USDC', terms: { description: 'd', checks: [] }, payerAgentId: 'agt_x', payeeAgentId: 'agt_y' };
  const components = openApiDocument(h.app.routes).components as { schemas: Record<string, unknown> };
  const withRefs = JSON.parse(JSON.stringify(schema).replace(/#\/components\/schemas\//g, '#/$defs/'));
  withRefs.$defs = JSON.parse(JSON.stringify(components.schemas).replace(/#\/components\/schemas\//g, '#/$defs/'));
  const validate = ajv.compile(withRefs);
  assert.equal(validate(body), true, JSON.stringify(validate.errors));
  assert.equal(ssValidate(body, CreateEscrowBody)[0], undefined);
  const extra = { ...body, colour: 'red' };
  assert.equal(validate(extra), false);
  assert.notEqual(ssValidate(extra, CreateEscrowBody)[0], undefined);
  assert.deepEqual(Object.keys((schema as any).properties).sort(), Object.keys(CreateEscrowBody.schema).sort());
  assert.deepEqual((toJsonSchema(ResolveBody) as any).properties.outcome.enum, ['release', 'refund', 'split']);
  assert.deepEqual((toJsonSchema(ResolveBody) as any).required, ['outcome']);
});

test('every error envelope points at /docs/errors, a page that lists every code with its status, cause and fix', async () => {
  const r = await h.req('GET', '/v1/nope');
  assert.equal(expectError(r, 404, 'not_found').length > 0, true);
  const page = await h.req('GET', '/docs/errors');
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type')!, /text\/html/);
  for (const code of [
    'bad_request',
    'unauthorized',
    'forbidden',
    'mandate_violation',
    'unauthorized_ruling',
    'not_found',
    'invalid_state',
    'unprocessable',
    'payload_too_large',
    'rate_limited',
    'custody_failed',
    'payment_invalid',
  ]) {
    assert.match(page.text, new RegExp(`<tr id="${code}"><td><code>${code}</code></td><td>\\d{3}</td>`));
  }
});
