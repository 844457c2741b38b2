// The OpenAPI 3.1 document, generated from the route table and the structs the routes validate
// with (SPEC part 9): every route the router serves, and only those.
import type { Struct } from 'superstruct';
import type { RouteDef } from '../http/route.ts';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import { toJsonSchema } from './jsonSchema.ts';
import { RESPONSES, SCHEMAS } from './components.ts';

export const API_VERSION = '0.3.0';

/** Query parameters of the routes that take them. */
const QUERY: Record<string, Array<{ name: string; schema: Record<string, unknown>; description: string }>> = {
  'GET /v1/escrows': [
    { name: 'state', schema: { type: 'string', enum: ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'] }, description: 'only escrows in this state' },
    { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 1000 }, description: 'page size; without it every escrow is returned' },
    { name: 'cursor', schema: { type: 'string' }, description: 'nextCursor of the previous page' },
  ],
  'GET /v1/webhooks/attempts': [
    { name: 'escrowId', schema: { type: 'string', pattern: '^esc_' }, description: 'only this escrow\'s attempts' },
    { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 1000 }, description: 'page size; without it every attempt is returned' },
    { name: 'cursor', schema: { type: 'string' }, description: 'nextCursor of the previous page' },
  ],
  'GET /v1/log/entries': [
    { name: 'start', schema: { type: 'integer', minimum: 0 }, description: 'first leaf index (default 0)' },
    { name: 'end', schema: { type: 'integer', minimum: 0 }, description: 'leaf index after the last one (exclusive; at most start + 1000)' },
  ],
};

/** Request headers of the routes that read them. */
const HEADERS: Record<string, Array<{ name: string; description: string }>> = {
  'POST /v1/escrows': [{ name: 'Idempotency-Key', description: '1-255 characters; the first 2xx response is replayed for 24 h (CONTRACT §3)' }],
  'POST /v1/escrows/:id/fund': [{ name: 'Idempotency-Key', description: '1-255 characters; the first 2xx response is replayed for 24 h (CONTRACT §3)' }],
  'GET /v1/x402/demo': [
    { name: 'X-PAYMENT', description: 'x402 v1: base64 JSON {x402Version: 1, scheme, network, payload: {authorization, signature}} (proof-sandbox scheme)' },
    { name: 'PAYMENT-SIGNATURE', description: 'x402 v2: base64 JSON {x402Version: 2, resource?, accepted, payload: {authorization, signature}}; send one of the two' },
  ],
};

/** Response headers of the routes that send more than x-request-id (x402: CONTRACT §6, both transports' names). */
const RESPONSE_HEADERS: Record<string, Record<string, { description: string }>> = {
  'GET /v1/x402/demo': {
    'X-PAYMENT-RESPONSE': { description: 'x402 v1: base64 JSON {success: true, transaction: proofId, network: "proof-local", payer, escrowId, proofId, outcome: "released"}' },
    'PAYMENT-RESPONSE': { description: 'x402 v2: the same SettlementResponse with network "proof:local" (CAIP-2)' },
  },
};

const oasPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');
const opId = (def: RouteDef) =>
  def.method.toLowerCase() + oasPath(def.path).replace(/[{}]/g, '').split(/[/._-]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');

function bodySchema(body: Struct<any, any> | Struct<any, any>[]): Record<string, unknown> {
  return Array.isArray(body) ? { oneOf: body.map((b) => toJsonSchema(b)) } : toJsonSchema(body);
}

function errorResponses(codes: string[]): Record<string, unknown> {
  const byStatus = new Map<number, string[]>();
  for (const c of codes) {
    const status = ERROR_CODES[c as ErrorCode]?.status;
    if (status === undefined) throw new Error(`route declares unknown error code ${c}`);
    byStatus.set(status, [...(byStatus.get(status) ?? []), c]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, cs] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: cs.map((c) => `\`${c}\`: ${ERROR_CODES[c as ErrorCode].cause}`).join(' '),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      ...(status === 402 ? { headers: { 'PAYMENT-REQUIRED': { description: 'x402 v2: base64 of this 402 body', schema: { type: 'string' } } } } : {}),
      ...(status === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' } }, 'RateLimit-Limit': { schema: { type: 'integer' } }, 'RateLimit-Remaining': { schema: { type: 'integer' } }, 'RateLimit-Reset': { schema: { type: 'integer' } } } } : {}),
    };
  }
  return out;
}

export function openApiDocument(routes: ReadonlyArray<RouteDef>): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of routes) {
    const key = `${def.method} ${def.path}`;
    const params = [...def.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = (QUERY[key] ?? []).map((q) => ({ name: q.name, in: 'query', required: false, schema: q.schema, description: q.description }));
    const headers = (HEADERS[key] ?? []).map((h) => ({ name: h.name, in: 'header', required: false, schema: { type: 'string' }, description: h.description }));
    const text = def.contentType ?? (def.path === '/v1/log/checkpoint' ? 'text/plain' : 'application/json');
    const op: Record<string, unknown> = {
      operationId: opId(def),
      summary: def.summary,
      tags: [def.tag],
      security: def.access === 'public' ? [] : [{ bearer: [] }],
      ...(params.length + query.length + headers.length ? { parameters: [...params, ...query, ...headers] } : {}),
      ...(def.body ? { requestBody: { required: true, content: { 'application/json': { schema: bodySchema(def.body) } } } } : {}),
      responses: {
        [String(def.success.status)]: {
          description: def.success.description,
          content: { [text]: { schema: RESPONSES[key] ?? {} } },
          ...(def.access === 'public' ? {} : {
            headers: {
              'x-request-id': { schema: { type: 'string' } },
              ...Object.fromEntries(Object.entries(RESPONSE_HEADERS[key] ?? {}).map(([n, h]) => [n, { ...h, schema: { type: 'string' } }])),
            },
          }),
        },
        ...errorResponses(def.errors),
        ...(def.access !== 'public' && !def.errors.includes('unauthorized') ? errorResponses(['unauthorized']) : {}),
      },
      ...(def.access === 'root' ? { description: 'Admin: root key (API_KEY) only; a minted key or an open sandbox gets 403 forbidden.' } : {}),
      ...(def.sandboxOnly ? { description: 'Open sandbox only; hosted deployments answer 403 forbidden.' } : {}),
    };
    (paths[oasPath(def.path)] ??= {})[def.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Escrow settlement service',
      version: API_VERSION,
      description: 'Escrows on simulated rails, deliveries verified against machine-readable terms, disputes closed only by signature or timeout, and an Ed25519-signed settlement proof for every closed matter, logged in an RFC 6962 transparency log. Errors: every error is {error: {code, message, docsUrl}}; see /docs/errors.',
    },
    servers: [{ url: '/' }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY or a minted esk_ key>. Not needed in an open sandbox.' } },
    },
  };
}
