// The packages ship their declaration files with their comments (dist/*.d.ts), so a comment may
// cite only what a consumer has: the package's README, an RFC or another public standard. Not the
// service's source tree, its tests or its planning documents, none of which ship.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGES = ['protocol', 'client'].map((p) => fileURLToPath(new URL(`../../packages/${p}/src`, import.meta.url)));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) =>
    statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : n.endsWith('.ts') ? [join(dir, n)] : [],
  );
}

/** The comment text of a file: // lines and /* blocks (a rough cut, enough for citations). */
function comments(text: string): string[] {
  return [...text.matchAll(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g)].map((m) => m[0]);
}

const UNSHIPPED = [/\bSPEC\b/, /\bCONTRACT\b/, /\bissue \d/i, /\b(src|test|docs|contracts|bench)\/[\w./-]+/];

test("the packages' comments cite nothing a package does not ship", () => {
  const found: string[] = [];
  for (const file of PACKAGES.flatMap(files)) {
    for (const c of comments(readFileSync(file, 'utf8'))) {
      for (const re of UNSHIPPED) {
        const m = re.exec(c);
        if (m) found.push(`${file.slice(file.indexOf('packages/'))}: ${m[0]}`);
      }
    }
  }
  assert.deepEqual(found, []);
});
