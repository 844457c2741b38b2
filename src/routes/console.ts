// The browser-facing pages: the console (/console and its hashed assets), `/`, the API reference
// (/docs) and the error codes page (/docs/errors). All served from memory with a strict CSP.
import { defineRoutes } from '../http/route.ts';
import { notFound } from '../errors.ts';
import { openApiDocument } from '../openapi/document.ts';
import { errorsPage } from '../openapi/errorsPage.ts';
import { ASSETS } from '../console/assets.gen.ts';
import { assetResponse, htmlResponse } from '../console/headers.ts';
import { consolePage, landingPage } from '../console/pages.ts';
import { docsPage } from '../console/docsPage.ts';
import { faviconResponse } from '../console/favicon.ts';

/** The success of an HTML page: 200 with a text/html body. */
const html = (description: string) => ({ status: 200, description, contentType: 'text/html' });

export const consoleRoutes = defineRoutes({ tag: 'console', access: 'public' }, [
  {
    route: 'GET /',
    page: true,
    summary:
      'Open sandbox: a redirect to /console. Hosted: a landing page linking the console, the API reference and the OpenAPI document.',
    success: html('text/html landing page (hosted); 303 to /console in the open sandbox'),
    errors: [],
    async handler({ svc }) {
      if (svc.config.apiKey === undefined) return new Response(null, { status: 303, headers: { location: '/console' } });
      return htmlResponse(landingPage(svc.version));
    },
  },
  {
    route: 'GET /console',
    page: true,
    summary:
      'The console: escrows, offline proof verification, log explorer, webhooks and sandbox controls (hosted: asks for a key, kept in sessionStorage).',
    success: html('text/html page; one same-origin script and stylesheet, strict Content-Security-Policy'),
    errors: [],
    handler: async ({ svc }) => htmlResponse(consolePage(svc.config.apiKey === undefined ? 'sandbox' : 'hosted', svc.version)),
  },
  {
    route: 'GET /console/assets/:name',
    page: true,
    summary: 'A content-hashed console asset (script or stylesheet), cacheable for good.',
    success: { status: 200, description: 'text/javascript or text/css', contentType: 'text/javascript' },
    errors: ['not_found'],
    async handler({ params }) {
      // Own properties only: a name like "constructor" or "__proto__" is simply unknown.
      const asset = Object.hasOwn(ASSETS, params.name) ? ASSETS[params.name] : undefined;
      if (!asset) throw notFound(`no console asset named ${params.name}`);
      return assetResponse(asset.body, asset.type);
    },
  },
  {
    route: 'GET /favicon.ico',
    page: true,
    summary: 'The site icon browsers request on their own (a 32×32 icon).',
    success: { status: 200, description: 'image/x-icon', contentType: 'image/x-icon' },
    errors: [],
    handler: async () => faviconResponse(),
  },
  {
    route: 'GET /docs',
    page: true,
    summary: 'The API reference: this OpenAPI document rendered as HTML on the server (no script, no CDN).',
    success: html('text/html'),
    errors: [],
    handler: async ({ routes, svc }) => htmlResponse(docsPage(openApiDocument(routes, { serverUrl: svc.config.publicUrl }))),
  },
  {
    route: 'GET /docs/errors',
    tag: 'meta',
    summary: 'HTML page listing every error code with its status, cause and fix (the target of docsUrl).',
    success: html('text/html'),
    errors: [],
    handler: async () => htmlResponse(errorsPage()),
  },
]);
