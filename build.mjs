// Bundles the service into one ESM file, dist/escrow-settlement.mjs, run with plain `node`.
// PGlite's wasm and data files are copied beside it: PGlite finds them through
// new URL('./pglite.wasm', import.meta.url), which in the bundle is dist/.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const out = join(root, 'dist');
mkdirSync(out, { recursive: true });

/**
 * The console: rebuild src/console/assets.gen.ts from src/console/ui/ first, so the bundle embeds the
 * current console (the module is committed too; test/console/pages.test.ts checks it is current).
 */
async function buildConsole() {
  const { writeConsoleAssets } = await import('./src/console/build.mjs');
  const r = await writeConsoleAssets();
  console.log(`console: ${r.jsGzip} B JS gzipped (budget 153600)${r.changed ? ', src/console/assets.gen.ts rewritten' : ''}`);
}
await buildConsole();

await build({
  entryPoints: [join(root, 'src/main.ts')],
  // The root tsconfig's paths: the workspace packages from their sources, never a stale dist/.
  tsconfig: join(root, 'tsconfig.json'),
  outfile: join(out, 'escrow-settlement.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  legalComments: 'none',
  // Some dependencies are CommonJS that call require(): give the ESM bundle a require.
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  logLevel: 'warning',
});

const pgliteDist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
for (const f of ['pglite.wasm', 'pglite.data', 'initdb.wasm']) copyFileSync(join(pgliteDist, f), join(out, f));
console.log('built dist/escrow-settlement.mjs (+ PGlite assets)');
