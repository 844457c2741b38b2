// The layout shows the core's boundary (docs/design.md §1): only src/main.ts and src/node/ touch the
// Node runtime (the layer rule for the rest is test/deploy/layers.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../process/proc.ts';

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const files = tsFiles(join(ROOT, 'src')).map((f) => ({ path: relative(ROOT, f), text: readFileSync(f, 'utf8') }));
/** Import specifiers of a file (static `from '…'` and dynamic `import('…')`). */
const importsOf = (text: string) => [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]);
/** The Node edge. */
const edge = (path: string) => path === 'src/main.ts' || path.startsWith('src/node/');

test('only src/main.ts and src/node/ import node:* modules or read process.env', () => {
  const offenders = files
    .filter((f) => !edge(f.path))
    .filter(
      (f) =>
        importsOf(f.text).some((s) => s.startsWith('node:')) || /\bprocess\.env\b/.test(f.text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')),
    )
    .map((f) => f.path);
  assert.deepEqual(offenders, []);
});

test('the Node edge is gathered under src/node/', () => {
  const nodeFiles = files
    .filter((f) => f.path.startsWith('src/node/'))
    .map((f) => f.path)
    .sort();
  for (const f of ['src/node/adapter.ts', 'src/node/requestLog.ts', 'src/node/start.ts', 'src/node/webhookTransport.ts'])
    assert.ok(nodeFiles.includes(f), f);
  const main = files.find((f) => f.path === 'src/main.ts')!;
  assert.deepEqual(
    importsOf(main.text),
    ['./node/cli.ts', './node/start.ts'],
    'src/main.ts is only the entry point: read the arguments, then start',
  );
});
