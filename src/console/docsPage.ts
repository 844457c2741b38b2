// /docs: the OpenAPI document rendered as HTML on the server (our own renderer: no CDN, no script),
// so the reference is exactly the document GET /v1/openapi.json serves.
import { esc } from './headers.ts';
import { docsShell } from './pages.ts';

// biome-ignore lint/suspicious/noExplicitAny: walks the OpenAPI document this service generated, whose shape is known.
type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Inline code for `backticks` in descriptions, after escaping. */
const text = (s: string | undefined) => (s ? esc(s).replace(/`([^`]+)`/g, '<code>$1</code>') : '');
const anchor = (method: string, path: string) => `op-${method}-${path.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}`;

/** A JSON Schema as a compact, readable type expression (refs link to their component). */
export function schemaType(s: Json | undefined, depth = 0): string {
  if (!s || Object.keys(s).length === 0) return '<span class="t">any</span>';
  if (s.$ref) {
    const name = String(s.$ref).split('/').pop()!;
    return `<a href="#schema-${esc(name)}">${esc(name)}</a>`;
  }
  if (s.oneOf || s.anyOf) return (s.oneOf ?? s.anyOf).map((x: Json) => schemaType(x, depth)).join(' <span class="t">or</span> ');
  if (s.enum) return s.enum.map((v: unknown) => `<code>${esc(JSON.stringify(v))}</code>`).join(' | ');
  if (s.const !== undefined) return `<code>${esc(JSON.stringify(s.const))}</code>`;
  const t = Array.isArray(s.type) ? s.type.join('|') : s.type;
  if (t === 'array') return `array of ${schemaType(s.items, depth)}`;
  if (t === 'object' || s.properties) {
    if (!s.properties || depth > 3) return '<span class="t">object</span>';
    return propsTable(s, depth + 1);
  }
  const facts = ['pattern', 'format', 'minimum', 'maximum', 'minLength', 'maxLength', 'maxItems']
    .filter((k) => s[k] !== undefined)
    .map((k) => `${k} ${esc(String(s[k]))}`);
  return `<span class="t">${esc(String(t ?? 'any'))}</span>${facts.length ? ` <span class="facts">(${facts.join(', ')})</span>` : ''}`;
}

function propsTable(s: Json, depth: number): string {
  const req = new Set<string>(s.required ?? []);
  const rows = Object.entries(s.properties as Record<string, Json>).map(
    ([k, v]) =>
      `<tr><td><code>${esc(k)}</code>${req.has(k) ? ' <span class="req">required</span>' : ''}</td><td>${schemaType(v, depth)}${v.description ? `<br>${text(v.description)}` : ''}</td></tr>`,
  );
  return `<table class="props"><thead><tr><th scope="col">field</th><th scope="col">type</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function operation(path: string, method: string, op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const body = op.requestBody?.content?.['application/json']?.schema;
  const responses = Object.entries(op.responses ?? {}) as Array<[string, Json]>;
  const auth = (op.security ?? []).length === 0 ? '<span class="pill">public</span>' : '<span class="pill key">bearer key</span>';
  return `<section class="op" id="${anchor(method, path)}" aria-labelledby="${anchor(method, path)}-h">
<h3 id="${anchor(method, path)}-h"><span class="method m-${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code> ${auth}</h3>
<p>${text(op.summary)}</p>${op.description ? `<p>${text(op.description)}</p>` : ''}
${
  params.length
    ? `<h4>Parameters</h4><table><thead><tr><th scope="col">name</th><th scope="col">in</th><th scope="col">type</th><th scope="col">description</th></tr></thead><tbody>${params
        .map(
          (p) =>
            `<tr><td><code>${esc(p.name)}</code>${p.required ? ' <span class="req">required</span>' : ''}</td><td>${esc(p.in)}</td><td>${schemaType(p.schema)}</td><td>${text(p.description)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : ''
}
${body ? `<h4>Request body</h4>${schemaType(body)}` : ''}
<h4>Responses</h4><table><thead><tr><th scope="col">status</th><th scope="col">description</th><th scope="col">body</th></tr></thead><tbody>${responses
    .map(([status, r]) => {
      const content = r.content ? Object.entries(r.content as Record<string, Json>)[0] : undefined;
      const codes = status >= '400' ? [...String(r.description ?? '').matchAll(/`([a-z_]+)`:/g)].map((m) => m[1]) : [];
      return `<tr><td>${esc(status)}</td><td>${codes.length ? codes.map((c) => `<a href="/docs/errors#${esc(c)}"><code>${esc(c)}</code></a>`).join(', ') : text(r.description)}</td><td>${content ? `<span class="facts">${esc(content[0])}</span> ${schemaType(content[1].schema)}` : ''}</td></tr>`;
    })
    .join('')}</tbody></table>
</section>`;
}

/** The first calls of a lifecycle, in order, as a newcomer makes them in the sandbox. */
const FIRST_CALLS: Array<[method: string, path: string, what: string]> = [
  [
    'post',
    '/v1/agents',
    'twice, <code>{"label": "payer"}</code> and <code>{"label": "payee"}</code>: two sandbox agents whose keys the service holds',
  ],
  [
    'post',
    '/v1/escrows',
    '<code>{"amount": "10", "asset": "USDC", "payerAgentId", "payeeAgentId", "terms": {"description": "a report with a title", "checks": [{"kind": "shape", "requiredFields": ["title"]}]}}</code>: an escrow in state <code>created</code>',
  ],
  ['post', '/v1/escrows/{id}/fund', 'custody locks the amount; the escrow is <code>funded</code> and has a delivery deadline'],
  [
    'post',
    '/v1/escrows/{id}/delivery',
    '<code>{"agentId": payee, "payload": {"title": "done"}}</code>: the payload is checked against the terms; a pass settles and returns the settlement proof',
  ],
  ['get', '/v1/proofs/{id}/bundle', "with the proof's id: everything needed to verify that proof offline"],
];

/** What a newcomer needs before the reference: what the service is, how to authenticate, a first lifecycle. */
function gettingStarted(doc: Json, intro: string): string {
  const auth = doc.components?.securitySchemes?.bearer?.description as string | undefined;
  const calls = FIRST_CALLS.map(([m, path, what]) => {
    const call = `<span class="method m-${m}">${m.toUpperCase()}</span> <code>${esc(path)}</code>`;
    return `<li>${doc.paths?.[path]?.[m] ? `<a href="#${anchor(m, path)}">${call}</a>` : call} ${what}</li>`;
  });
  return `<section id="start" aria-labelledby="start-h"><h2 id="start-h">Getting started</h2>
<p>${text(intro)}</p>
<h3>Authenticate</h3><p>${text(auth ?? 'Authorization: Bearer <key>.')}</p>
<h3>A first lifecycle</h3><ol class="first-calls">${calls.join('')}</ol>
<p>Watch each step in <a href="/console">the console</a>: the escrow's path, its hash-chained trail and its proof. An error's message names the field at fault, and every error code is explained on <a href="/docs/errors">the error codes page</a>. The whole API is also <a href="/v1/openapi.json">an OpenAPI ${esc(doc.openapi)} document</a>, which this page renders.</p>
</section>`;
}

/** The whole reference page for an OpenAPI 3.1 document. */
export function docsPage(doc: Json): string {
  const byTag = new Map<string, string[]>();
  const toc = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'other';
      (byTag.get(tag) ?? byTag.set(tag, []).get(tag)!).push(operation(path, m, op));
      (toc.get(tag) ?? toc.set(tag, []).get(tag)!).push(
        `<li><a href="#${anchor(m, path)}"><span class="method m-${m}">${m.toUpperCase()}</span> ${esc(path)}</a></li>`,
      );
    }
  }
  // The description's first paragraph says what the service is; the others, the strictness every request meets.
  const [intro = '', ...rules] = String(doc.info?.description ?? '').split(/\n\n+/);
  const schemas = Object.entries((doc.components?.schemas ?? {}) as Record<string, Json>).map(
    ([name, s]) =>
      `<section class="schema" id="schema-${esc(name)}" aria-labelledby="schema-${esc(name)}-h"><h3 id="schema-${esc(name)}-h">${esc(name)}</h3>${schemaType(s)}</section>`,
  );
  const body = `<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/">Escrow settlement</a><nav aria-label="Site"><a href="/console">Console</a> <a href="/docs" aria-current="page">API reference</a> <a href="/docs/errors">Error codes</a> <a href="/v1/openapi.json">OpenAPI JSON</a></nav></header>
<div class="docs">
<nav class="toc" aria-label="Operations"><h2>Operations</h2><ul><li><a href="#start">Getting started</a></li>${rules.length ? '<li><a href="#rules">Rules on every request</a></li>' : ''}</ul>${[...toc].map(([tag, items]) => `<h3>${esc(tag)}</h3><ul>${items.join('')}</ul>`).join('')}<h3><a href="#schemas">Schemas</a></h3></nav>
<main id="main" tabindex="-1">
<h1>${esc(doc.info?.title ?? 'API')} <span class="ver">${esc(doc.info?.version ?? '')}</span></h1>
${gettingStarted(doc, intro)}
${rules.length ? `<section id="rules" aria-labelledby="rules-h"><h2 id="rules-h">Rules on every request</h2>${rules.map((r) => `<p>${text(r)}</p>`).join('')}</section>` : ''}
${[...byTag].map(([tag, ops]) => `<section aria-label="${esc(tag)} operations"><h2 id="tag-${esc(tag)}">${esc(tag)}</h2>${ops.join('\n')}</section>`).join('\n')}
<section aria-labelledby="schemas"><h2 id="schemas">Schemas</h2>${schemas.join('\n')}</section>
</main></div>`;
  return docsShell(`${doc.info?.title ?? 'API'}: API reference`, body);
}
