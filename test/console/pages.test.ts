// The console's pages and assets, in process: the committed generated module is current and within
// budget; every page is served with a strict CSP and no inline script or style; `/` is a redirect
// in the sandbox and a landing page when hosted; /docs renders every operation of the OpenAPI
// document and /docs/errors every error code the API can answer with.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { makeHarness, expectError } from '../harness.ts';
import { ROOT } from '../process/proc.ts';
import { ASSETS, CONSOLE_CSS, CONSOLE_JS } from '../../src/console/assets.gen.ts';
import { CSP } from '../../src/console/headers.ts';
import { ERROR_CODES } from '../../src/errors.ts';

const sandbox = await makeHarness('pglite');
const KEY = 'pages-test-root-key-0123456789';
const hosted = await makeHarness('pglite', { API_KEY: KEY });
after(async () => {
  await sandbox.close();
  await hosted.close();
});

test('the committed src/console/assets.gen.ts is what the build makes from src/console/ui/ (else: npm run build:console)', async () => {
  const build = await import(pathToFileURL(`${ROOT}src/console/build.mjs`).href);
  const built = await build.buildConsoleAssets();
  const committed = readFileSync(`${ROOT}src/console/assets.gen.ts`, 'utf8');
  assert.ok(committed === built.module, 'src/console/assets.gen.ts is stale: run `npm run build:console` and commit it');
  assert.ok(built.jsGzip < build.JS_BUDGET_GZIP, `console JS is ${built.jsGzip} B gzipped, over the ${build.JS_BUDGET_GZIP} B budget`);
});

test("the console bundle loads nothing from elsewhere: no absolute URL but the SVG namespace, an example.com placeholder and an error text's loopback example", () => {
  const js = ASSETS[CONSOLE_JS].body;
  // example.com is reserved (RFC 2606): it appears only as the webhook form's placeholder text. The
  // loopback address is the example in the typed client's TypeError for a baseUrl that is not a string
  // (the console passes its own origin).
  const text = new Set(['http://www.w3.org/2000/svg', 'http://127.0.0.1:4280']);
  const urls = [...js.matchAll(/https?:\/\/[^\s"'`)]+/g)]
    .map((m) => m[0])
    .filter((u) => !text.has(u) && !u.startsWith('https://example.com/'));
  assert.deepEqual(urls, []);
  assert.ok(!/\beval\(|new Function\(/.test(js), 'no eval: the CSP forbids it');
});

const html = ['/console', '/docs', '/docs/errors'];

test('every page and asset carries the strict CSP and safe headers; pages have no inline script, style or handler', async () => {
  for (const h of [sandbox, hosted]) {
    for (const path of [...html, ...(h === hosted ? ['/'] : [])]) {
      const r = await h.req('GET', path);
      assert.equal(r.status, 200, path);
      assert.match(r.headers.get('content-type')!, /^text\/html/);
      assert.equal(r.headers.get('content-security-policy'), CSP);
      assert.match(CSP, /default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'.*frame-ancestors 'none'/);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(r.headers.get('cache-control'), 'no-cache');
      assert.doesNotMatch(r.text, /<script(?![^>]*\ssrc="\/console\/assets\/)/, `${path}: inline script`);
      assert.doesNotMatch(r.text, /<style|\sstyle="|\son[a-z]+="/i, `${path}: inline style or handler`);
      assert.match(r.text, new RegExp(`<link rel="stylesheet" href="/console/assets/${CONSOLE_CSS}">`));
    }
  }
  for (const name of [CONSOLE_JS, CONSOLE_CSS]) {
    const r = await sandbox.req('GET', `/console/assets/${name}`);
    assert.equal(r.status, 200);
    assert.equal(r.text, ASSETS[name].body);
    assert.equal(r.headers.get('content-type'), name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
    assert.equal(r.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(r.headers.get('content-security-policy'), CSP);
  }
  assert.match(CONSOLE_JS, /^console-[0-9a-f]{12}\.js$/);
});

test('an unknown asset is a 404 envelope, including names that are Object.prototype properties', async () => {
  for (const name of ['nope.js', '__proto__', 'constructor', 'toString', 'console-000000000000.js']) {
    expectError(await sandbox.req('GET', `/console/assets/${name}`), 404, 'not_found');
  }
});

test('`/` leads to the console in the sandbox, and is a landing page when hosted; the console says which mode it is in', async () => {
  const s = await sandbox.req('GET', '/');
  assert.equal(s.status, 303);
  assert.equal(s.headers.get('location'), '/console');
  const h = await hosted.req('GET', '/');
  for (const href of ['/console', '/docs', '/v1/openapi.json', '/docs/errors']) assert.match(h.text, new RegExp(`<a href="${href}">`));
  assert.match((await sandbox.req('GET', '/console')).text, /<meta name="console-mode" content="sandbox">/);
  assert.match((await hosted.req('GET', '/console')).text, /<meta name="console-mode" content="hosted">/);
  // The pages need no key; the API behind them does.
  expectError(await hosted.req('GET', '/v1/escrows'), 401, 'unauthorized');
});

test('/docs renders every operation and schema of the OpenAPI document, and links each error code to /docs/errors', async () => {
  const doc = (await hosted.req('GET', '/v1/openapi.json', undefined, { authorization: `Bearer ${KEY}` })).body;
  const page = (await hosted.req('GET', '/docs')).text;
  let ops = 0;
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) {
      ops++;
      const id = `op-${method}-${path.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}`;
      assert.ok(page.includes(`id="${id}"`), `${method} ${path} missing`);
      for (const status of Object.keys(op.responses)) {
        for (const m of String(op.responses[status].description).matchAll(/`([a-z_]+)`:/g))
          assert.ok(page.includes(`<a href="/docs/errors#${m[1]}">`), m[1]);
      }
    }
  }
  assert.equal(ops, hosted.app.routes.length);
  for (const name of Object.keys(doc.components.schemas)) assert.ok(page.includes(`id="schema-${name}"`), name);
});

test('/docs opens with what a newcomer needs (the service, authentication, a first lifecycle, the console and /docs/errors); 405 and I-JSON come after', async () => {
  const page = (await sandbox.req('GET', '/docs')).text;
  const main = page.slice(page.indexOf('<main'));
  const start = /<h1[^>]*>.*?<\/h1>\s*<section id="start"[^>]*>([\s\S]*?)<\/section>/.exec(main);
  assert.ok(start, 'the first thing after the title is the getting-started section');
  const first = start[1];
  assert.match(first, /Getting started/);
  assert.match(first, /settlement proof/, 'says what the service is');
  assert.match(first, /Authorization: Bearer/, 'says how to authenticate');
  for (const href of ['/console', '/docs/errors']) assert.ok(first.includes(`<a href="${href}">`), href);
  // The first calls of a lifecycle, in order, each a link to its operation on the page.
  const calls = [...first.matchAll(/<a href="#(op-[^"]+)">/g)].map((m) => m[1]);
  assert.deepEqual(calls, [
    'op-post-v1-agents',
    'op-post-v1-escrows',
    'op-post-v1-escrows-id-fund',
    'op-post-v1-escrows-id-delivery',
    'op-get-v1-proofs-id-bundle',
  ]);
  for (const id of calls) assert.ok(page.includes(`id="${id}"`), id);
  assert.doesNotMatch(first, /405|I-JSON|method_not_allowed/);
  const rules = main.indexOf('<section id="rules"');
  assert.ok(rules > main.indexOf('</section>'), 'the rules follow the getting-started section');
  for (const detail of ['405', 'I-JSON', 'method_not_allowed']) assert.ok(main.indexOf(detail) > rules, `${detail} is in the rules, below`);
});

test('/docs/errors lists exactly the codes the API answers with (the OpenAPI Error enum), each with its status', async () => {
  const doc = (await sandbox.req('GET', '/v1/openapi.json')).body;
  const codes: string[] = doc.components.schemas.Error.properties.error.properties.code.enum;
  assert.deepEqual(codes, Object.keys(ERROR_CODES));
  const page = (await sandbox.req('GET', '/docs/errors')).text;
  const rows = [...page.matchAll(/<tr id="([a-z_0-9]+)"><td><code>\1<\/code><\/td><td>(\d{3})<\/td>/g)].map((m) => [m[1], Number(m[2])]);
  assert.deepEqual(
    rows,
    Object.entries(ERROR_CODES).map(([c, e]) => [c, e.status]),
  );
  // A real error's docsUrl lands on its row.
  const e = await sandbox.req('GET', '/v1/escrows/esc_missing');
  assert.ok(page.includes(`<tr id="${e.body.error.docsUrl.split('#')[1]}">`));
});
