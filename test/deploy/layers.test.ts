// The layer rule of docs/design.md §2.2: a module imports only from its own layer or a lower one, but
// for the few imports that table names with its reason. The packages sit below the service; inside
// src/, the foundations sit below the store, the configuration and the infrastructure, those below
// the domain (its aggregates in order), the domain below the plumbing and jobs, those below the ways
// in (routes, x402, MCP), and those below the app and its edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { ROOT } from '../process/proc.ts';

/** Layers from the bottom up, as docs/design.md §2.2 lists them from the top down; a path belongs to the first prefix that matches it. */
export const LAYERS: Array<[number, string[]]> = [
  [0, ['packages/protocol/']],
  [1, ['packages/client/']],
  [2, ['src/errors.ts', 'src/version.ts', 'src/configVariables.ts', 'src/validate.ts', 'src/paging.ts', 'src/crypto/', 'src/units/']],
  [3, ['src/db/']],
  [4, ['src/config.ts', 'src/config/']],
  [5, ['src/custody/', 'src/tlog/', 'src/webhooks/']],
  [6, ['src/access/', 'src/terms/']],
  [7, ['src/proof/']],
  [8, ['src/commandDeps.ts']],
  [9, ['src/mandate/']],
  [10, ['src/escrow/']],
  [11, ['src/dispute/']],
  [12, ['src/services.ts', 'src/http/', 'src/jobs/', 'src/witness/', 'src/ops/']],
  [13, ['src/routes/', 'src/mcp/', 'src/x402/', 'src/openapi/', 'src/console/']],
  [14, ['src/app.ts']],
  [15, ['src/main.ts', 'src/node/', 'src/deno.ts']],
];

/**
 * The imports that run up a layer, each with its reason in docs/design.md §2.2 ("Imports that run
 * up"): at most three, and each must still exist (one that is gone comes off this list and the doc).
 */
export const UPWARD: string[] = ['src/proof/proofs.ts → src/escrow/escrowRow.ts'];

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

test('no module imports from a higher layer but those docs/design.md names', () => {
  const upward = new Set<string>();
  for (const f of files) {
    const mine = layerOf(f.path)!;
    for (const spec of importsOf(f.text)) {
      const t = target(f.path, spec);
      if (t === undefined) continue;
      const theirs = layerOf(t);
      if (theirs !== undefined && theirs > mine) upward.add(`${f.path} → ${t}`);
    }
  }
  assert.deepEqual([...upward].sort(), [...UPWARD].sort());
  assert.ok(UPWARD.length <= 3, 'at most three imports run up a layer');
});

test('docs/design.md §2.2 lists the same layers, in the same order, and the same imports that run up', () => {
  const doc = readFileSync(join(ROOT, 'docs/design.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### 2.2 '), doc.indexOf('### 2.3 '));
  const rows = section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| Layer') && !l.startsWith('|--'))
    .map((l) => l.split('|')[2])
    .map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => (m[1].startsWith('packages/') ? `${m[1]}/` : `src/${m[1]}`)).sort());
  assert.deepEqual(
    rows.reverse(),
    LAYERS.map(([, prefixes]) => [...prefixes].sort()),
  );
  for (const up of UPWARD) {
    const [from, to] = up.split(' → ').map((p) => p.replace(/^src\//, ''));
    assert.ok(section.includes(`\`${from}\` → \`${to}\``), `docs/design.md §2.2 gives the reason for ${up}`);
  }
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
