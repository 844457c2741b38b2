// The layer rule of docs/design.md ("Layers"): a module imports only from its own layer or a lower
// one. The packages sit below the service; inside src/, plumbing sits below the domain, the domain
// below the ways in (routes, x402, MCP, jobs), and those below the app and its edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT } from '../process/proc.ts';

/** Layers from the bottom up; a path belongs to the first prefix that matches it. */
export const LAYERS: Array<[number, string[]]> = [
  [0, ['packages/protocol/']],
  [1, ['packages/client/']],
  [
    2,
    [
      'src/errors.ts',
      'src/config.ts',
      'src/configVariables.ts',
      'src/version.ts',
      'src/validate.ts',
      'src/paging.ts',
      'src/crypto/',
      'src/units/',
      'src/witness/config.ts',
      'src/mandate/ap2Config.ts',
      'src/db/sessionAttrs.ts',
    ],
  ],
  [3, ['src/db/']],
  [4, ['src/custody/', 'src/tlog/', 'src/webhooks/']],
  [5, ['src/access/', 'src/terms/', 'src/escrow/', 'src/dispute/', 'src/mandate/', 'src/proof/']],
  [6, ['src/services.ts', 'src/ops/', 'src/http/', 'src/jobs/', 'src/witness/']],
  [7, ['src/routes/', 'src/x402/', 'src/mcp/', 'src/openapi/', 'src/console/']],
  [8, ['src/app.ts']],
  [9, ['src/node/', 'src/main.ts', 'src/deno.ts']],
];

export function layerOf(path: string): number | undefined {
  for (const [rank, prefixes] of LAYERS) if (prefixes.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p))) return rank;
  return undefined;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.name === 'node_modules' || e.name === 'dist'
      ? []
      : e.isDirectory()
        ? tsFiles(join(dir, e.name))
        : e.name.endsWith('.ts')
          ? [join(dir, e.name)]
          : [],
  );
}

const files = [...tsFiles(join(ROOT, 'src')), ...tsFiles(join(ROOT, 'packages'))].map((f) => ({
  path: relative(ROOT, f),
  text: readFileSync(f, 'utf8'),
}));
const importsOf = (text: string) => [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]);

/** The repository path an import specifier names, or undefined for a third-party package or a builtin. */
function target(from: string, spec: string): string | undefined {
  const pkg = /^@escrow-settlement\/(protocol|client)(?:\/(.+))?$/.exec(spec);
  if (pkg) return `packages/${pkg[1]}/src/${pkg[2] ?? 'index'}.ts`;
  if (spec.startsWith('.')) return normalize(join(dirname(from), spec));
  return undefined;
}

test('every file of src/ and packages/ belongs to a layer', () => {
  assert.deepEqual(
    files.filter((f) => layerOf(f.path) === undefined).map((f) => f.path),
    [],
  );
});

test('no module imports from a higher layer', () => {
  const upward: string[] = [];
  for (const f of files) {
    const mine = layerOf(f.path)!;
    for (const spec of importsOf(f.text)) {
      const t = target(f.path, spec);
      if (t === undefined) continue;
      const theirs = layerOf(t);
      if (theirs !== undefined && theirs > mine) upward.push(`${f.path} (${mine}) → ${t} (${theirs})`);
    }
  }
  assert.deepEqual(upward, []);
});

test('the protocol package imports no other package of the repository and no node:* module', () => {
  const bad = files
    .filter((f) => f.path.startsWith('packages/protocol/'))
    .flatMap((f) =>
      importsOf(f.text)
        .filter((s) => s.startsWith('node:') || s.startsWith('@escrow-settlement/'))
        .map((s) => `${f.path}: ${s}`),
    );
  assert.deepEqual(bad, []);
});

test("the service takes the wire from the protocol package: only the console's browser UI imports the client package", () => {
  // The console runs the typed client in the browser (docs/design.md §2.2); the rest of src/ stands on
  // the protocol package alone, so the client is free to change its HTTP, signing and CLI code.
  const bad = files
    .filter((f) => f.path.startsWith('src/') && !f.path.startsWith('src/console/ui/'))
    .flatMap((f) =>
      importsOf(f.text)
        .filter((s) => target(f.path, s)?.startsWith('packages/client/'))
        .map((s) => `${f.path}: ${s}`),
    );
  assert.deepEqual(bad, []);
});
