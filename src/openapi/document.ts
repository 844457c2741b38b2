// The OpenAPI 3.1 document, generated from the route table and the structs the routes validate
// with (docs/protocol.md §23): every route the router serves, and only those.
import type { Struct } from 'superstruct';
import type { RouteDef } from '../http/route.ts';
import { toJsonSchema } from './jsonSchema.ts';
import { codeInfo, RESPONSES, SCHEMAS } from './components.ts';
import { VERSION as API_VERSION } from '../version.ts';
import { MCP_TRANSPORT_RESPONSES } from './mcp.ts';

export { API_VERSION };

type QueryParam = { name: string; schema: Record<string, unknown>; description: string };

/** `limit` and `cursor`, which every list route reads (docs/protocol.md §9.2; src/paging.ts). */
const PAGE: QueryParam[] = [
  {
    name: 'limit',
    schema: { type: 'integer', minimum: 1, maximum: 1000 },
    description: 'page size (1-1000); the answer then carries nextCursor (null on the last page). Without it the whole list is returned.',
  },
  {
    name: 'cursor',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+$' },
    description: 'opaque: nextCursor of the previous page of the same list',
  },
];
const ts = { type: 'string', format: 'date-time' };

/** Query parameters of the routes that take them. */
export const QUERY: Record<string, QueryParam[]> = {
  'GET /v1/escrows': [
    {
      name: 'state',
      schema: { type: 'string', enum: ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'] },
      description: 'only escrows in this state',
    },
    {
      name: 'agentId',
      schema: { type: 'string', pattern: '^agt_', maxLength: 64 },
      description: "only escrows where this sandbox agent's key is the payer or the payee (404 for an unknown agent)",
    },
    { name: 'createdAfter', schema: ts, description: 'only escrows with createdAt strictly after this ISO 8601 date-time' },
    { name: 'createdBefore', schema: ts, description: 'only escrows with createdAt strictly before this ISO 8601 date-time' },
    {
      name: 'order',
      schema: { type: 'string', enum: ['oldest', 'newest'], default: 'oldest' },
      description:
        "oldest: creation order (the default); newest: newest first. A cursor continues in its own page's order (400 naming cursor otherwise)",
    },
    ...PAGE,
  ],
  'GET /v1/escrows/:id/trail': PAGE,
  'GET /v1/escrows/:id/events': PAGE,
  'GET /v1/webhooks': PAGE,
  'GET /v1/webhooks/dead-letters': PAGE,
  'GET /v1/admin/keys': PAGE,
  'GET /v1/webhooks/attempts': [
    { name: 'escrowId', schema: { type: 'string', pattern: '^esc_' }, description: "only this escrow's attempts" },
    {
      name: 'limit',
      schema: { type: 'integer', minimum: 1, maximum: 1000 },
      description: 'page size; without it every attempt is returned',
    },
    { name: 'cursor', schema: { type: 'string' }, description: 'nextCursor of the previous page' },
  ],
  'GET /v1/proofs/:id/bundle': [
    {
      name: 'disclose',
      schema: { type: 'string', enum: ['payload'] },
      description:
        "payload: add disclosed {payload, submittedAt}, the delivery's payload, so verifyBundle re-runs every check of the terms (verdict.replay); without it only hash and deadline checks are re-run",
    },
  ],
  'GET /v1/log/entries': [
    { name: 'start', schema: { type: 'integer', minimum: 0 }, description: 'first leaf index (default 0)' },
    {
      name: 'end',
      schema: { type: 'integer', minimum: 0 },
      description: 'leaf index after the last one (exclusive; at most start + 1000)',
    },
    ...PAGE.map((p) => ({ ...p, description: `${p.description} (instead of ${p.name === 'limit' ? 'end' : 'start'})` })),
  ],
};

/** Request headers of the routes that read them. */
const HEADERS: Record<string, Array<{ name: string; description: string }>> = {
  'POST /v1/escrows': [{ name: 'Idempotency-Key', description: '1-255 characters; the first 2xx response is replayed for 24 h' }],
  'POST /v1/escrows/:id/fund': [{ name: 'Idempotency-Key', description: '1-255 characters; the first 2xx response is replayed for 24 h' }],
  'POST /v1/escrows/:id/dispute': [
    {
      name: 'Idempotency-Key',
      description:
        '1-255 characters; the first 2xx response is replayed for 24 h, where the same signed action sent without it is 409 replayed',
    },
  ],
  'POST /v1/escrows/:id/dispute/evidence': [
    {
      name: 'Idempotency-Key',
      description:
        '1-255 characters; the first 2xx response is replayed for 24 h, where the same signed action sent without it is 409 replayed',
    },
  ],
  'POST /v1/escrows/:id/dispute/resolve': [
    { name: 'Idempotency-Key', description: '1-255 characters; the first 2xx response is replayed for 24 h' },
  ],
  'GET /v1/x402/demo': [
    {
      name: 'X-PAYMENT',
      description: 'x402 v1: base64 JSON {x402Version: 1, scheme, network, payload: {authorization, signature}} (proof-sandbox scheme)',
    },
    {
      name: 'PAYMENT-SIGNATURE',
      description: 'x402 v2: base64 JSON {x402Version: 2, resource?, accepted, payload: {authorization, signature}}; send one of the two',
    },
  ],
};

/** Response headers of the routes that send more than x-request-id (x402: docs/protocol.md §15, both transports' names). */
const RESPONSE_HEADERS: Record<string, Record<string, { description: string }>> = {
  'GET /v1/x402/demo': {
    'X-PAYMENT-RESPONSE': {
      description:
        'x402 v1: base64 JSON {success: true, transaction: proofId, network: "proof-local", payer, escrowId, proofId, outcome: "released"}',
    },
    'PAYMENT-RESPONSE': { description: 'x402 v2: the same SettlementResponse with network "proof:local" (CAIP-2)' },
  },
};

// A greedy `:name+` (a tile path spanning segments) is one templated segment in the document.
const oasPath = (p: string) => p.replace(/:(\w+)\+?/g, '{$1}');
const opId = (def: RouteDef) =>
  def.method.toLowerCase() +
  oasPath(def.path)
    .replace(/[{}]/g, '')
    .split(/[/._-]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

function bodySchema(body: Struct<any, any> | Struct<any, any>[]): Record<string, unknown> {
  return Array.isArray(body) ? { oneOf: body.map((b) => toJsonSchema(b)) } : toJsonSchema(body);
}

const int = { schema: { type: 'integer' } };
/** Headers that come with a status whatever the route. */
const STATUS_HEADERS: Record<number, Record<string, unknown>> = {
  402: { 'PAYMENT-REQUIRED': { description: 'x402 v2: base64 of this 402 body', schema: { type: 'string' } } },
  405: { Allow: { description: 'the methods this path takes, e.g. `GET, POST`', schema: { type: 'string' } } },
  429: { 'Retry-After': int, 'RateLimit-Limit': int, 'RateLimit-Remaining': int, 'RateLimit-Reset': int },
  503: { 'Retry-After': { description: 'seconds to wait before retrying', ...int } },
};

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

function errorResponses(codes: string[]): Record<string, unknown> {
  const byStatus = new Map<number, string[]>();
  for (const c of codes) {
    const status = codeInfo(c)?.status;
    if (status === undefined) throw new Error(`route declares unknown error code ${c}`);
    const list = byStatus.get(status) ?? [];
    if (!list.includes(c)) byStatus.set(status, [...list, c]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, cs] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: cs.map((c) => `\`${c}\`: ${codeInfo(c).cause}`).join(' '),
      content: errorContent,
      ...(STATUS_HEADERS[status] ? { headers: STATUS_HEADERS[status] } : {}),
    };
  }
  return out;
}

/**
 * Every status a route can answer: its own codes, plus what the edge answers on any route (docs/protocol.md §19.3):
 * 401 where a key is needed, 403 for a cross-site Origin, 405 for another method on the path, 413 for a
 * body over its cap, 421 from
 * the open sandbox for a Host it does not know (DNS rebinding), 429 where a budget applies or one
 * client has too many requests open, 400/408/431 from the edge for a request it cannot take, and 503
 * while the database is out of reach.
 */
function responsesOf(def: RouteDef): Record<string, unknown> {
  const codes = [
    ...def.errors,
    // Any route: a path or query parameter with a NUL or a lone surrogate (src/http/params.ts), a
    // request target no URL can be made of; and the Node edge's own answers (src/node/edgeAnswer.ts):
    // a missing Host, headers over their cap or too slow, too many requests open from one client.
    'bad_request',
    'request_timeout',
    'headers_too_large',
    'rate_limited',
    ...(def.access === 'public' ? [] : ['unauthorized']),
    'forbidden',
    'method_not_allowed',
    // docs/protocol.md §2.6: every request body has a cap (1 MB; 32 KB on POST /v1/verify).
    ...(def.method === 'GET' ? [] : ['payload_too_large']),
    'unavailable',
  ];
  const out = errorResponses(codes);
  out['421'] = {
    description:
      'Misdirected request: the open sandbox answers only to Host names it knows (localhost, loopback addresses, the PUBLIC_URL host), so a DNS-rebinding page cannot pass as same-origin.',
    content: errorContent,
  };
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => Number(a) - Number(b)));
}

const TAGS: Record<string, string> = {
  meta: 'Health, the issuer key document, this document and the error page.',
  agents: 'Sandbox agents: Ed25519 keypairs the service holds for testing.',
  mandates: 'Principal-signed caps that bind an agent key, enforced at escrow creation.',
  escrows: 'Escrows through their lifecycle: create, fund, deliver, refund; the trail and events of each.',
  ap2: "AP2 v0.2 Payment Mandates as an escrow's authority: challenges and Payment Receipts (docs/ap2.md).",
  disputes: 'Disputes, evidence and rulings (co-signed, by the arbiter, or by timeout).',
  custody: 'The custody journal of a closing and its retry.',
  sandbox: 'Open-sandbox tools: the clock and custody faults.',
  proofs: 'Settlement proofs, their verification and offline bundles.',
  log: 'The RFC 6962 transparency log: head, inclusion, consistency, entries, checkpoint.',
  verify: 'Public verification of a proof document.',
  admin: 'Root-key operations: issuer rotation, bearer keys, metrics, rate counters.',
  webhooks: 'Signed event deliveries, dead letters and redelivery.',
  x402: 'The x402 payment demo, and the x402 v2 facilitator (auth-capture payments held in escrow, docs/x402.md).',
  mcp: 'The Model Context Protocol endpoint: the escrow routes as tools for LLM agents.',
};

export interface DocumentOptions {
  /** The `servers` URL: PUBLIC_URL (config publicUrl). */
  serverUrl?: string;
}

export function openApiDocument(routes: ReadonlyArray<RouteDef>, opts: DocumentOptions = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of routes) {
    const key = `${def.method} ${def.path}`;
    const params = [...def.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = (QUERY[key] ?? []).map((q) => ({
      name: q.name,
      in: 'query',
      required: false,
      schema: q.schema,
      description: q.description,
    }));
    const headers = (HEADERS[key] ?? []).map((h) => ({
      name: h.name,
      in: 'header',
      required: false,
      schema: { type: 'string' },
      description: h.description,
    }));
    const text = def.success.contentType ?? 'application/json';
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
          ...(def.access === 'public'
            ? {}
            : {
                headers: {
                  'x-request-id': { schema: { type: 'string' } },
                  ...Object.fromEntries(
                    Object.entries(RESPONSE_HEADERS[key] ?? {}).map(([n, h]) => [n, { ...h, schema: { type: 'string' } }]),
                  ),
                  ...(def.signsAgainstNow
                    ? {
                        'x-service-now': {
                          description:
                            'The service clock (sandbox offset included) that signedAt/submittedAt must be within 300 s of; sent on errors too',
                          schema: { type: 'string', format: 'date-time' },
                        },
                      }
                    : {}),
                },
              }),
        },
        ...responsesOf(def),
        // The open sandbox leads / to the console (README.md "Console").
        ...(key === 'POST /mcp' ? MCP_TRANSPORT_RESPONSES : {}),
        // The open sandbox leads / to the console (README.md "Console").
        ...(key === 'GET /'
          ? {
              303: {
                description: 'Open sandbox: See Other, to /console.',
                headers: { Location: { description: '/console', schema: { type: 'string' } } },
              },
            }
          : {}),
        // /health answers 503 with its own body ({ok: false, ...}), not the error envelope (docs/protocol.md §22).
        ...(key === 'GET /health'
          ? {
              503: {
                description: 'The database is unreachable: ok is false.',
                content: { 'application/json': { schema: RESPONSES[key] } },
              },
            }
          : {}),
      },
      ...(def.access === 'root'
        ? { description: 'Admin: root key (API_KEY) only; a minted key or an open sandbox gets 403 forbidden.' }
        : {}),
      ...(def.sandboxOnly ? { description: 'Open sandbox only; hosted deployments answer 403 forbidden.' } : {}),
    };
    (paths[oasPath(def.path)] ??= {})[def.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Escrow settlement service',
      version: API_VERSION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      description:
        // Two paragraphs (CommonMark): what the service is, then the rules every request meets; /docs
        // opens with the first and shows the second below its getting-started section.
        'Escrows on simulated rails, deliveries verified against machine-readable terms, disputes closed only by signature or timeout, and an Ed25519-signed settlement proof for every closed matter, logged in an RFC 6962 transparency log. Errors: every error is {error: {code, message, docsUrl}}; see /docs/errors.\n\n' +
        'On every path: another method is 405 `method_not_allowed` with an `Allow` header (TRACE, CONNECT and unknown methods included); OPTIONS is 204 with `Allow` (a CORS preflight from an origin in CORS_ORIGINS adds the Access-Control-* headers); HEAD answers as GET without a body. ' +
        'JSON bodies, path and query parameters must be I-JSON (RFC 7493): a duplicate key, a NUL character or a lone UTF-16 surrogate anywhere is 400 `bad_request` naming the field. ' +
        "A browser request whose Origin is neither the service's own nor in CORS_ORIGINS (or with Sec-Fetch-Site: cross-site and no such Origin) is 403 `forbidden` and does nothing; the open sandbox answers a Host name it does not know with 421 `misdirected_request`. " +
        'With a minted key, agents it did not register and escrows (and their proofs) where it registered no party are 404 `not_found`.',
    },
    servers: [{ url: (opts.serverUrl ?? '/').replace(/(.)\/+$/, '$1'), description: 'this deployment' }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'Authorization: Bearer <API_KEY or a minted esk_ key>. Not needed in an open sandbox.',
        },
      },
    },
  };
}
