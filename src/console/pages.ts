// The HTML shells: the console page (one script, one stylesheet, no inline code) and the hosted
// landing page at `/`. Asset names come from the generated module, so they are content-hashed.
import { CONSOLE_CSS, CONSOLE_JS } from './assets.gen.ts';
import { esc } from './headers.ts';

export const ASSET_PREFIX = '/console/assets/';
export const cssHref = () => ASSET_PREFIX + CONSOLE_CSS;

function page(title: string, body: string, opts: { script?: boolean; meta?: string } = {}): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>${opts.meta ?? ''}
<link rel="stylesheet" href="${cssHref()}">${opts.script ? `\n<script type="module" src="${ASSET_PREFIX + CONSOLE_JS}"></script>` : ''}
</head><body>
${body}
</body></html>
`;
}

/** The console: the script renders everything; `console-mode` tells it whether to ask for a key. */
export function consolePage(mode: 'hosted' | 'sandbox', version: string): string {
  return page(
    'Escrow settlement console',
    `<a class="skip" href="#main">Skip to content</a>
<div id="app"><main id="main" tabindex="-1"><h1>Escrow settlement console</h1><p>Loading… (the console needs JavaScript)</p></main></div>`,
    { script: true, meta: `\n<meta name="console-mode" content="${mode}"><meta name="service-version" content="${esc(version)}">` },
  );
}

/** Hosted `/`: where to go, since the API itself needs a key. */
export function landingPage(version: string): string {
  return page(
    'Escrow settlement service',
    `<main id="main" class="landing">
<h1>Escrow settlement service</h1>
<p>Escrows on simulated rails, deliveries verified against machine-readable terms, disputes closed only by signature or timeout, and an Ed25519-signed settlement proof for every closed matter, logged in an RFC 6962 transparency log. Version ${esc(version)}.</p>
<ul class="cards">
<li><a href="/console">Console</a>: see, drive and verify matters in the browser (asks for your API key; kept in this tab only).</li>
<li><a href="/docs">API reference</a>: every route, its parameters, bodies and errors.</li>
<li><a href="/v1/openapi.json">OpenAPI document</a> (JSON; send <code>Authorization: Bearer &lt;key&gt;</code>).</li>
<li><a href="/docs/errors">Error codes</a>: each code, its status, cause and fix.</li>
<li><a href="/.well-known/proof-issuer.json">Issuer keys</a>: pin them to verify proofs offline.</li>
</ul>
</main>`,
  );
}

/** A docs page around server-rendered HTML (no script at all). */
export const docsShell = (title: string, body: string) => page(title, body);
