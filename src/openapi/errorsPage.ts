// The page every error's docsUrl points at: each code, its status, cause and fix (docs/protocol.md §19).
// Rendered from ERROR_CODES, the table errors are made from, so the page and the API cannot disagree.
import { ERROR_CODES } from '../errors.ts';
import { docsShell } from '../console/pages.ts';

const esc = (s: string) =>
  s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/`([^`]+)`/g, '<code>$1</code>');

export function errorsPage(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(
      ([code, e]) =>
        `<tr id="${code}"><td><code>${code}</code></td><td>${e.status}</td><td>${esc(e.cause)}</td><td>${esc(e.fix)}</td></tr>`,
    )
    .join('\n');
  return docsShell(
    'Escrow settlement service: error codes',
    `<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/">Escrow settlement</a><nav aria-label="Site"><a href="/console">Console</a> <a href="/docs">API reference</a> <a href="/docs/errors" aria-current="page">Error codes</a> <a href="/v1/openapi.json">OpenAPI JSON</a></nav></header>
<main id="main" tabindex="-1" class="narrow">
<h1>Error codes</h1>
<p>Every error answers <code>{"error": {"code", "message", "docsUrl"}}</code>. <code>code</code> is stable and machine-matchable; <code>message</code> is for people and names the field or state involved. Only <code>rate_limited</code> (after <code>Retry-After</code>) and <code>custody_failed</code> (through the retry route) are worth retrying unchanged.</p>
<table class="errors"><thead><tr><th scope="col">code</th><th scope="col">HTTP</th><th scope="col">cause</th><th scope="col">fix</th></tr></thead><tbody>
${rows}
</tbody></table>
</main>`,
  );
}
