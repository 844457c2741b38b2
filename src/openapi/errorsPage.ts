// The page every error's docsUrl points at: each code, its status, cause and fix (SPEC part 7).
import { ERROR_CODES } from '../errors.ts';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/`([^`]+)`/g, '<code>$1</code>');

export function errorsPage(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(([code, e]) => `<tr id="${code}"><td><code>${code}</code></td><td>${e.status}</td><td>${esc(e.cause)}</td><td>${esc(e.fix)}</td></tr>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Escrow settlement service: error codes</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.4rem .6rem;vertical-align:top}tr:target{background:#ffd}</style>
</head><body>
<h1>Error codes</h1>
<p>Every error answers <code>{"error": {"code", "message", "docsUrl"}}</code>. <code>code</code> is stable and machine-matchable; <code>message</code> is for people and names the field or state involved. Only <code>rate_limited</code> (after <code>Retry-After</code>) and <code>custody_failed</code> (through the retry route) are worth retrying unchanged.</p>
<table><thead><tr><th>code</th><th>HTTP</th><th>cause</th><th>fix</th></tr></thead><tbody>
${rows}
</tbody></table>
</body></html>
`;
}
