// The OpenAPI document passes a maintained linter (Redocly's recommended ruleset) with no error and no
// warning, and documents every status the routes answer (docs/protocol.md §20, §23).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { makeHarness, type Harness } from '../harness.ts';
import { openApiDocument } from '../../src/openapi/document.ts';

const config = await createConfig({ extends: ['recommended'] });
const lint = async (doc: unknown) =>
  (await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config })).map(
    (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`,
  );

const sandbox = await makeHarness('pglite');
const hosted = await makeHarness('pglite', { API_KEY: 'root-key-0123456789abcdef' }, { db: sandbox.db });
test.after(() => sandbox.close());
const doc = (await sandbox.req('GET', '/v1/openapi.json')).body;
const opOf = (method: string, path: string) => doc.paths[path.replace(/:(\w+)\+?/g, '{$1}')][method.toLowerCase()];

test("Redocly's recommended ruleset finds no error and no warning in the served document", async () => {
  assert.deepEqual(await lint(doc), []);
});

test('the linter is really running: a document with a known fault gets a problem', async () => {
  const broken = structuredClone(doc);
  delete broken.info.license;
  broken.paths['/health'].get.responses = { 200: broken.paths['/health'].get.responses['200'] };
  const problems = await lint(broken);
  assert.ok(
    problems.some((p) => p.includes('info-license')),
    problems.join('\n'),
  );
  assert.ok(
    problems.some((p) => p.includes('operation-4xx-response')),
    problems.join('\n'),
  );
});

test('servers is PUBLIC_URL (by default the listening address)', async () => {
  assert.deepEqual(
    doc.servers.map((s: any) => s.url),
    [sandbox.config.publicUrl.replace(/\/+$/, '')],
  );
  const pub = await makeHarness('pglite', { PUBLIC_URL: 'https://escrow.example.org/' }, { db: sandbox.db });
  assert.deepEqual(
    (await pub.req('GET', '/v1/openapi.json')).body.servers.map((s: any) => s.url),
    ['https://escrow.example.org'],
  );
  const built = openApiDocument(sandbox.app.routes, { serverUrl: 'https://escrow.example.org/' }) as any;
  assert.deepEqual(
    built.servers.map((s: any) => s.url),
    ['https://escrow.example.org'],
  );
});

test('POST /v1/mandates requires caps and POST /v1/escrows requires terms, as the service does', async () => {
  const mandate = opOf('POST', '/v1/mandates').requestBody.content['application/json'].schema;
  assert.deepEqual(mandate.required, ['principal', 'caps', 'signature']);
  assert.equal(mandate.properties.caps.$ref, '#/components/schemas/MandateCaps');
  const escrow = opOf('POST', '/v1/escrows').requestBody.content['application/json'].schema;
  assert.deepEqual(escrow.required, ['amount', 'asset', 'terms']);
  assert.equal(escrow.properties.terms.$ref, '#/components/schemas/Terms');
  assert.equal(escrow.properties.metadata.maxProperties, 50);
  const agents = await sandbox.req('POST', '/v1/agents', {});
  const base = { amount: '1', asset: 'USDC', payerAgentId: agents.body.id, payeeAgentId: agents.body.id };
  assert.match((await sandbox.req('POST', '/v1/escrows', base)).body.error.message, /^terms is required/);
  assert.match(
    (
      await sandbox.req('POST', '/v1/mandates', {
        principal: 'a'.repeat(64),
        signature: { signer: 'a'.repeat(64), signature: 'b'.repeat(128) },
      })
    ).body.error.message,
    /^caps is required/,
  );
});

test('every operation documents 403, 405 (with Allow), 421 and 503 (with Retry-After); /health documents its own 503', () => {
  for (const r of sandbox.app.routes) {
    const op = opOf(r.method, r.path);
    for (const s of ['403', '405', '421', '503']) assert.ok(op.responses[s], `${r.method} ${r.path} documents ${s}`);
    assert.ok(op.responses['405'].headers.Allow, `${r.path} 405 names Allow`);
    if (r.rate) assert.ok(op.responses['429'].headers['Retry-After'], `${r.path} 429`);
    if (r.path !== '/health') assert.ok(op.responses['503'].headers['Retry-After'], `${r.path} 503 names Retry-After`);
  }
  const health = opOf('GET', '/health').responses['503'].content['application/json'].schema;
  assert.ok(health.properties.ok, '/health 503 is the health body with ok false');
  const codes = doc.components.schemas.Error.properties.error.properties.code.enum;
  for (const c of ['method_not_allowed', 'unavailable', 'bad_request', 'not_found']) assert.ok(codes.includes(c), c);
});

const BIG = JSON.stringify({ pad: 'x'.repeat(1_100_000) });

/** Each route probed with what a careless client sends; every answer's status must be documented. */
async function probe(h: Harness, headers: Record<string, string>) {
  const undocumented: string[] = [];
  for (const r of h.app.routes) {
    const path = r.path.replace(/:(\w+)\+?/g, (_m, n) => (n === 'firstSize' || n === 'secondSize' ? '999999' : `x_${n}`));
    for (const [body, query] of [
      [undefined, ''],
      ['{"colour":"red"}', ''],
      ['not json', ''],
      [BIG, ''],
      [undefined, '?limit=0&colour=red'],
    ] as const) {
      const res = await h.req(r.method, path + query, r.method === 'GET' ? undefined : body, headers);
      const documented = opOf(r.method, r.path).responses[String(res.status)];
      if (!documented)
        undocumented.push(`${r.method} ${path}${query} ${(body ?? '').slice(0, 20)} -> ${res.status} ${res.text.slice(0, 120)}`);
    }
  }
  return undocumented;
}

test('every status a route answers to a careless request is documented for it (open sandbox and hosted, with and without a key)', async () => {
  const found = [
    ...(await probe(sandbox, {})),
    ...(await probe(hosted, {})),
    ...(await probe(hosted, { authorization: 'Bearer root-key-0123456789abcdef' })),
  ];
  assert.deepEqual(found, []);
});
