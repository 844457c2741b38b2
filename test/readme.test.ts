// Runs the README's client example: the first ```ts block under "## Client library" in README.md,
// or test/readme-example.ts until that section exists. The example talks to a local sandbox at
// http://127.0.0.1:4280; here that origin is answered by an in-process app, so no server is needed.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { makeHarness } from './harness.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SANDBOX = 'http://127.0.0.1:4280';

/** The first ```ts block of the "## Client library" section; null without the section. */
export function clientExample(readme: string): string | null {
  const start = readme.search(/^## Client library[ \t]*$/m);
  if (start === -1) return null;
  const rest = readme.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end === -1 ? rest : rest.slice(0, end);
  const block = /^```ts[ \t]*\n([\s\S]*?)^```[ \t]*$/m.exec(section);
  if (!block) throw new Error('README.md has "## Client library" but no ```ts block under it');
  return block[1];
}

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const fromReadme = clientExample(readme);
// Inside the repository, so `@escrow-settlement/client` resolves to client/src through tsconfig "paths".
const generated = `${ROOT}.tmp/readme-example-${process.pid}.ts`;
const file = fromReadme === null ? `${ROOT}test/readme-example.ts` : generated;
if (fromReadme !== null) {
  mkdirSync(`${ROOT}.tmp`, { recursive: true });
  writeFileSync(generated, fromReadme);
}

const h = await makeHarness('pglite');
after(async () => {
  rmSync(generated, { force: true });
  await h.close();
});

test(`the README client example runs to the end against a sandbox (${fromReadme === null ? 'test/readme-example.ts' : 'README.md'})`, async () => {
  const realFetch = globalThis.fetch;
  const realLog = console.log;
  const printed: string[] = [];
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    return new URL(req.url).origin === SANDBOX ? h.app.fetch(req) : realFetch(input, init);
  }) as typeof fetch;
  console.log = (...args: unknown[]) => void printed.push(args.join(' '));
  try {
    await import(pathToFileURL(file).href);
  } finally {
    globalThis.fetch = realFetch;
    console.log = realLog;
  }
  assert.match(printed.join('\n'), /^released 25 USDC: proof prf_\w+ verifies offline$/m);
  assert.match(printed.join('\n'), /^x402 paid: escrow esc_\w+, proof prf_\w+$/m);
  const [{ n }] = await h.db.query('SELECT count(*)::int AS n FROM proofs');
  assert.equal(n, 2, 'the example settled its escrow and its x402 payment');
});

test('the example is taken from the README section when there is one', () => {
  assert.equal(clientExample('# x\n## Other\n```ts\nno\n```\n'), null);
  assert.equal(
    clientExample('## Client library\ntext\n```sh\nnpm i\n```\n```ts\nconst a = 1;\n```\n```ts\nlater\n```\n## Next\n'),
    'const a = 1;\n',
  );
  assert.throws(() => clientExample('## Client library\nno code\n## Next\n```ts\nx\n```\n'), /no ```ts block/);
});
