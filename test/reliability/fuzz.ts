// A fuzzer driven by the OpenAPI document (GET /v1/openapi.json): for every operation, a valid
// example built from its schemas, then malformed, oversized, deeply nested, wrong-typed and
// unicode-edge variants of the body and of every field in it, hostile path parameters and paths,
// hostile query strings, headers and methods. Cases are plain data, sent through app.fetch or over
// real HTTP by the tests. ReDoS-shaped strings for every validated string field live here too.

export interface Case {
  name: string;
  method: string;
  /** Path and query exactly as sent (over HTTP byte for byte; app.fetch goes through URL parsing). */
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

export interface Operation {
  method: string;
  /** OpenAPI path template (/v1/escrows/{id}). */
  template: string;
  op: any;
  schema?: any;
}

/** Real ids the examples use, so requests get past "not found" into the code under test. */
export interface FuzzContext {
  agentId: string;
  escrowId: string;
  proofId: string;
  mandateId: string;
  webhookUrl: string;
  now: string;
}

export function operations(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [template, ops] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      out.push({ method: method.toUpperCase(), template, op, schema: op.requestBody?.content?.['application/json']?.schema });
    }
  }
  return out;
}

export function resolve(doc: any, s: any): any {
  let x = s;
  for (let i = 0; x?.$ref && i < 20; i++) x = doc.components.schemas[String(x.$ref).split('/').pop()!];
  return x;
}

const HEX64 = 'ab'.repeat(32);

function stringFor(s: any, key: string, ctx: FuzzContext): string {
  const p: string | undefined = s?.pattern;
  if (p === '^[0-9a-f]{64}$') return HEX64;
  if (p === '^[0-9a-f]{128}$') return 'cd'.repeat(64);
  if (p?.includes('\\d')) return '10';
  if (p?.startsWith('^[A-Za-z0-9')) return 'USDC';
  if (p === '^agt_') return ctx.agentId;
  if (p === '^esc_') return ctx.escrowId;
  if (p === '^prf_') return ctx.proofId;
  if (p === '^mnd_') return ctx.mandateId;
  if (p?.startsWith('^') && p.endsWith('_')) return `${p.slice(1)}01aaaaaaaaaaaaaaaaaaaaaaaa`;
  if (s?.format === 'date-time' || /At$|^by$|validBefore/.test(key)) return ctx.now;
  if (key === 'url') return ctx.webhookUrl;
  return key === 'description' ? 'a report with a title' : `fuzz ${key}`;
}

/** A valid-looking instance of a schema: every property given, first branch of a oneOf. */
export function example(doc: any, schema: any, ctx: FuzzContext, key = '', branch = 0, depth = 0): unknown {
  const s = resolve(doc, schema);
  if (!s || depth > 8) return stringFor(undefined, key, ctx);
  if (s.oneOf) return example(doc, s.oneOf[Math.min(branch, s.oneOf.length - 1)], ctx, key, 0, depth + 1);
  if (s.anyOf) return example(doc, s.anyOf[0], ctx, key, 0, depth + 1);
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, p] of Object.entries<any>(s.properties ?? {})) out[k] = example(doc, p, ctx, k, 0, depth + 1);
      return out;
    }
    case 'array':
      return [example(doc, s.items, ctx, key.replace(/s$/, ''), 0, depth + 1)];
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      return stringFor(s, key, ctx);
    default:
      if (key === 'count') return 0;
      if (key === 'payload') return { title: 'fuzz' };
      return stringFor(s, key, ctx);
  }
}

export function fillTemplate(template: string, ctx: FuzzContext, override?: string): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (override !== undefined) return override;
    if (name === 'firstSize' || name === 'secondSize') return '1';
    if (name === 'proofId' || template.startsWith('/v1/proofs/')) return ctx.proofId;
    if (template.startsWith('/v1/mandates/')) return ctx.mandateId;
    if (name === 'keyId') return 'key_01aaaaaaaaaaaaaaaaaaaaaaaa';
    if (template.startsWith('/v1/webhooks/')) return 'dlr_01aaaaaaaaaaaaaaaaaaaaaaaa';
    return ctx.escrowId;
  });
}

type Path = Array<string | number>;

/** Every node of a JSON value with its path (the root included). */
function nodes(v: unknown, path: Path = [], out: Path[] = []): Path[] {
  out.push(path);
  if (v && typeof v === 'object') {
    if (Array.isArray(v)) v.forEach((x, i) => nodes(x, [...path, i], out));
    else for (const [k, x] of Object.entries(v)) nodes(x, [...path, k], out);
  }
  return out;
}

const clone = <T>(v: T): T => structuredClone(v);

function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = clone(root) as any;
  let cur = copy;
  for (const k of path.slice(0, -1)) cur = cur[k];
  cur[path[path.length - 1]] = value;
  return copy;
}

function deleteAt(root: unknown, path: Path): unknown {
  const copy = clone(root) as any;
  let cur = copy;
  for (const k of path.slice(0, -1)) cur = cur[k];
  if (Array.isArray(cur)) cur.splice(Number(path[path.length - 1]), 1);
  else delete cur[path[path.length - 1]];
  return copy;
}

const DEEP = '"__deep_placeholder__"';
export const deepArrays = (n: number) => '['.repeat(n) + ']'.repeat(n);
export const deepObjects = (n: number) => '{"a":'.repeat(n) + '0' + '}'.repeat(n);

export const WRONG_TYPES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -1e-308,
  2 ** 53 + 1,
  '',
  'x',
  [],
  {},
  [1, 'a', null],
  { a: { b: 1 } },
];
export const UNICODE_EDGES: string[] = [
  '\ud800',
  '\udfff',
  'a\ud83db',
  'nul\u0000byte',
  '\u0000',
  '\u202eRTL override\u202c',
  '\u200f\u200e\u2066',
  '😀🏳️‍🌈👨‍👩‍👧‍👦'.repeat(4),
  '\ufeffbom',
  'e\u0301\u0301\u0301',
  '\uffff\ufffe',
  '𝕏'.repeat(64),
  '\u2028\u2029',
  '\\u0000',
  '%00',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
];

/** Body mutations of one operation: the whole body, then every field of its valid example. */
export function bodyCases(method: string, path: string, valid: unknown, maxLen = 4000): Case[] {
  const cases: Case[] = [];
  const add = (name: string, body: string | Uint8Array, headers?: Record<string, string>) =>
    cases.push({ name, method, path, body, headers: { 'content-type': 'application/json', ...headers } });
  // The whole body.
  add('valid example', JSON.stringify(valid));
  for (const raw of [
    '',
    ' ',
    '{',
    '}',
    '{"a":',
    '[',
    'nul',
    'null',
    'true',
    '0',
    '-0',
    '1e999',
    '"str"',
    '[]',
    '[{}]',
    '{}garbage',
    '{"a":1}{"b":2}',
    'NaN',
    '{"a":NaN}',
    '{"a":Infinity}',
    "{'a':1}",
    '{"a":1,}',
    '{"\\ud800":1}',
    '{"a":"\\ud800"}',
    '\ufeff{}',
    '{"a":"\u0000"}',
    '\u0000',
  ])
    add(`raw ${JSON.stringify(raw).slice(0, 30)}`, raw);
  add('invalid UTF-8', Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d]));
  add('UTF-16 body', new Uint8Array(Buffer.from(JSON.stringify(valid), 'utf16le')));
  add('duplicate keys', JSON.stringify(valid).replace(/^\{/, '{"__dup":1,"__dup":2,'));
  add('__proto__ key', JSON.stringify(valid).replace(/^\{/, '{"__proto__":{"admin":true},"constructor":{"prototype":{}},'));
  add('10,000 nested arrays', deepArrays(10_000));
  add('10,000 nested objects', deepObjects(10_000));
  add('60 nested arrays (under the cap)', deepArrays(60));
  add('json bomb: 400,000 nested arrays within 1 MB', deepArrays(400_000));
  add('json bomb: 90,000 keys', `{${Array.from({ length: 90_000 }, (_, i) => `"k${i}":0`).join(',')}}`);
  add('json bomb: 300,000-element array', `[${Array(300_000).fill('0').join(',')}]`);
  add('900 KB string', JSON.stringify({ s: 'x'.repeat(900_000) }));
  add('just over 1 MB', JSON.stringify({ s: 'x'.repeat(1024 * 1024) }));
  add('long number', `{"n":${'9'.repeat(100_000)}}`);
  add('wrong content-type', JSON.stringify(valid), { 'content-type': 'text/plain' });
  add('form content-type', 'a=1&b=2', { 'content-type': 'application/x-www-form-urlencoded' });
  add('utf-16 charset', JSON.stringify(valid), { 'content-type': 'application/json; charset=utf-16' });
  // Every field.
  if (valid && typeof valid === 'object') {
    for (const path of nodes(valid).slice(1)) {
      const at = path.join('.');
      for (const w of WRONG_TYPES) add(`${at} = ${JSON.stringify(w)}`, JSON.stringify(setAt(valid, path, w)));
      for (const u of UNICODE_EDGES) add(`${at} = unicode ${JSON.stringify(u).slice(0, 20)}`, JSON.stringify(setAt(valid, path, u)));
      add(`${at} oversized`, JSON.stringify(setAt(valid, path, 'x'.repeat(maxLen + 1))));
      add(`${at} 200,000 chars`, JSON.stringify(setAt(valid, path, 'y'.repeat(200_000))));
      add(`${at} 10,000 nested arrays`, JSON.stringify(setAt(valid, path, '__deep_placeholder__')).replace(DEEP, deepArrays(10_000)));
      add(`${at} 10,000 nested objects`, JSON.stringify(setAt(valid, path, '__deep_placeholder__')).replace(DEEP, deepObjects(10_000)));
      add(`${at} removed`, JSON.stringify(deleteAt(valid, path)));
      const parent = path.slice(0, -1);
      add(`${at} with an unknown sibling`, JSON.stringify(setAt(valid, [...parent, '__unknown__'], 1)));
    }
  }
  return cases;
}

/** Hostile values for one path parameter (already in the form they travel, percent-encoded or not). */
export const PATH_PARAMS: string[] = [
  '',
  '%2F',
  '%2f..%2f..%2fadmin%2fkeys',
  '..',
  '%2e%2e',
  '%2e%2e%2f%2e%2e%2fv1%2fadmin%2fkeys',
  '.',
  'esc_' + 'a'.repeat(5_000),
  'x'.repeat(15_000),
  '%00',
  'esc_%00',
  '%E0%A4%A',
  '%',
  '%zz',
  '%uD800',
  '%ED%A0%80',
  '%F0%9F%98%80',
  '%EF%BC%A1',
  'esc_x%3Fy%3D1',
  'esc_x%23frag',
  '%20',
  '*',
  '%252F',
  'esc_%E2%80%AE',
  'prf_../../',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  '1e999',
  '-1',
  '0x10',
  '9'.repeat(40),
];

export function pathCases(ops: Operation[], ctx: FuzzContext): Case[] {
  const cases: Case[] = [];
  for (const o of ops) {
    if (!o.template.includes('{')) continue;
    for (const v of PATH_PARAMS) {
      cases.push({
        name: `${o.template} param ${v.slice(0, 30)}`,
        method: o.method,
        path: fillTemplate(o.template, ctx, v),
        ...(o.method === 'GET' ? {} : { body: '{}', headers: { 'content-type': 'application/json' } }),
      });
    }
  }
  const raw = [
    '/v1//escrows',
    '/v1/escrows/',
    '/V1/ESCROWS',
    '/v1/escrows/.',
    '/v1/escrows/./',
    '/v1/escrows;x',
    '/%76%31/escrows',
    '/v1/escrows/%2e%2e/admin/keys',
    '/v1/escrows/../admin/keys',
    '/v1/escrows/../../health',
    '/v1/./escrows',
    '/../../../../etc/passwd',
    '/v1/escrows/%2e%2e%2f%2e%2e%2fhealth',
    '//v1/escrows',
    '/v1/escrows?limit=1&limit=2',
    '/v1/escrows?state=%00',
    '/v1/escrows?state=' + 'a'.repeat(5000),
    '/v1/escrows?limit=-1',
    '/v1/escrows?limit=1e3',
    '/v1/escrows?limit=0x10',
    '/v1/escrows?cursor=' + '%'.repeat(10),
    '/v1/escrows?cursor=c_' + '9'.repeat(30),
    '/v1/escrows?unknown=1',
    '/v1/escrows?' + '&'.repeat(2000),
    '/v1/escrows?a[b]=1',
    '/v1/log/entries?start=-1',
    '/v1/log/entries?start=99999999999999999999',
    '/v1/log/entries?end=1.5',
    '/v1/log/entries?start=0&start=1',
    '/v1/log/entries?start=%20',
    '/v1/log/consistency/0',
    '/v1/log/consistency/1/0',
    '/v1/log/consistency/9007199254740993',
    '/v1/log/consistency/1e3',
    '/v1/log/consistency/%31',
    '/docs/errors?x=' + 'y'.repeat(3000),
    '/health/',
    '/.well-known/proof-issuer.json/..',
    '/v1/openapi.json%00',
    '/v1',
    '/',
    '/v1/admin',
    '/v1/sandbox',
  ];
  for (const p of raw) cases.push({ name: `path ${p.slice(0, 50)}`, method: 'GET', path: p });
  for (const p of ['/v1/escrows/../admin/keys', '/v1/admin/keys/', '/v1//admin/keys'])
    cases.push({ name: `POST ${p}`, method: 'POST', path: p, body: '{}', headers: { 'content-type': 'application/json' } });
  return cases;
}

/** Methods the route table does not serve, on every path. */
export function methodCases(ops: Operation[], ctx: FuzzContext): Case[] {
  const cases: Case[] = [];
  const paths = [...new Set(ops.map((o) => fillTemplate(o.template, ctx)))];
  for (const p of paths)
    for (const m of ['PUT', 'PATCH', 'OPTIONS', 'HEAD', 'DELETE']) cases.push({ name: `${m} ${p}`, method: m, path: p });
  return cases.filter((c) => !ops.some((o) => o.method === c.method && fillTemplate(o.template, ctx) === c.path));
}

/** Hostile headers on a few representative routes. */
export function headerCases(ctx: FuzzContext): Case[] {
  const body = JSON.stringify({ label: 'h' });
  const values: Array<[string, string]> = [
    ['authorization', 'Bearer'],
    ['authorization', 'Bearer '],
    ['authorization', 'Basic YWRtaW46YWRtaW4='],
    ['authorization', 'Bearer ' + 'x'.repeat(8000)],
    ['authorization', 'Bearer esk_' + 'a'.repeat(60)],
    ['authorization', 'bearer   esk_\u00ff\u00fe'],
    ['authorization', 'Bearer a b c'],
    ['authorization', ' '.repeat(5000) + 'Bearer x'],
    ['idempotency-key', ''],
    ['idempotency-key', 'k'.repeat(256)],
    ['idempotency-key', 'k'.repeat(255)],
    ['idempotency-key', '\u00ff\u00e9'],
    ['idempotency-key', ' '],
    ['x-request-id', 'r'.repeat(10_000)],
    ['x-request-id', '\u00ff'],
    ['x-request-id', '<script>'],
    ['content-length', '0'],
    ['content-type', 'application/json; charset=' + 'x'.repeat(5000)],
    ['content-type', ''],
    ['accept', '*/*;q=' + '9'.repeat(1000)],
    ['x-forwarded-for', '1.1.1.1, ' + '2.2.2.2, '.repeat(500)],
    ['x-payment', 'x'],
    ['x-payment', '!!!!'],
    ['x-payment', 'e30='],
    ['x-payment', 'W10='],
    [
      'x-payment',
      Buffer.from('{"x402Version":1,"scheme":"proof-sandbox","network":"proof-local","payload":' + deepArrays(5000) + '}').toString(
        'base64',
      ),
    ],
    ['x-payment', 'A'.repeat(12_000)],
    ['payment-signature', 'e30='],
    ['x-payment', Buffer.from(JSON.stringify({ x402Version: 1e308 })).toString('base64')],
  ];
  const cases: Case[] = [];
  for (const [k, v] of values) {
    cases.push({
      name: `POST /v1/agents ${k}: ${v.slice(0, 30)}`,
      method: 'POST',
      path: '/v1/agents',
      body,
      headers: { 'content-type': 'application/json', [k]: v },
    });
    cases.push({ name: `GET /v1/x402/demo ${k}: ${v.slice(0, 30)}`, method: 'GET', path: '/v1/x402/demo', headers: { [k]: v } });
    cases.push({
      name: `POST fund ${k}: ${v.slice(0, 30)}`,
      method: 'POST',
      path: `/v1/escrows/${ctx.escrowId}/fund`,
      headers: { [k]: v },
    });
  }
  const both = Buffer.from('{}').toString('base64');
  cases.push({
    name: 'both payment headers',
    method: 'GET',
    path: '/v1/x402/demo',
    headers: { 'x-payment': both, 'payment-signature': both },
  });
  return cases;
}

/** Every case of the document: bodies (each oneOf branch), paths, methods, headers. */
export function allCases(doc: any, ctx: FuzzContext): Case[] {
  const ops = operations(doc);
  const cases: Case[] = [];
  for (const o of ops) {
    const path = fillTemplate(o.template, ctx);
    if (!o.schema) {
      if (o.method !== 'GET') cases.push(...bodyCases(o.method, path, {}).slice(0, 45));
      continue;
    }
    const s = resolve(doc, o.schema);
    const branches = s.oneOf ? s.oneOf.length : 1;
    for (let b = 0; b < branches; b++) {
      const valid = example(doc, o.schema, ctx, '', b);
      cases.push(
        ...(b === 0
          ? bodyCases(o.method, path, valid)
          : bodyCases(o.method, path, valid).filter((c) => !c.name.startsWith('raw ') && !c.name.startsWith('json bomb'))),
      );
    }
  }
  cases.push(...pathCases(ops, ctx), ...methodCases(ops, ctx), ...headerCases(ctx));
  return cases;
}

// ---------------------------------------------------------------------------------------------
// ReDoS: strings shaped against the patterns the service validates with (and classic
// catastrophic-backtracking shapes), put into every string field of every operation.

export const REDOS: string[] = [
  'a'.repeat(50_000) + '!',
  '0'.repeat(50_000) + 'x',
  '1'.repeat(30_000) + '.' + '1'.repeat(30_000) + 'x',
  '0.' + '0'.repeat(50_000),
  '0'.repeat(20) + '.' + '0'.repeat(50_000) + 'x',
  ' '.repeat(50_000) + 'x',
  '\t\n'.repeat(25_000) + '!',
  'ab'.repeat(25_000) + 'g',
  'f'.repeat(127) + 'g' + 'f'.repeat(50_000),
  '/'.repeat(50_000),
  '/~'.repeat(25_000) + '~2',
  '2026-01-01T00:00:00.' + '1'.repeat(50_000) + 'Z',
  '2026-01-01T00:00' + ':00'.repeat(20_000),
  '9'.repeat(4) + '-' + '9'.repeat(50_000),
  'agt_' + '_'.repeat(50_000) + '!',
  'http://' + 'a.'.repeat(25_000) + '!',
  'http://[' + '0:'.repeat(20_000) + ']/',
  'http://' + '1.'.repeat(20_000) + '1/',
  '::'.repeat(25_000),
  '%'.repeat(50_000),
  'A'.repeat(49_999) + '=',
  'Bearer' + ' '.repeat(10_000) + 'x'.repeat(600) + ' '.repeat(10_000) + '!',
  'a'.repeat(64) + '\n',
];

/** Every string-valued field path in a valid example, with the example. */
export function stringFields(
  doc: any,
  ops: Operation[],
  ctx: FuzzContext,
): Array<{ method: string; path: string; valid: unknown; field: Path }> {
  const out: Array<{ method: string; path: string; valid: unknown; field: Path }> = [];
  for (const o of ops) {
    if (!o.schema) continue;
    const s = resolve(doc, o.schema);
    for (let b = 0; b < (s.oneOf ? s.oneOf.length : 1); b++) {
      const valid = example(doc, o.schema, ctx, '', b);
      for (const field of nodes(valid).slice(1)) {
        let v: any = valid;
        for (const k of field) v = v[k];
        if (typeof v === 'string') out.push({ method: o.method, path: fillTemplate(o.template, ctx), valid, field });
      }
    }
  }
  return out;
}

export function withField(valid: unknown, field: Path, value: string): string {
  return JSON.stringify(setAt(valid, field, value));
}
