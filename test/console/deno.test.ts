// The console under Deno: src/deno.ts serves the same pages and embedded assets (no fs at run time).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, startService } from '../process/proc.ts';
import { ASSETS, CONSOLE_JS } from '../../src/console/assets.gen.ts';

// Installed by .ci/run like test/deploy/deno.test.ts does; DENO_BIN overrides the location.
const DENO = process.env.DENO_BIN ?? join(ROOT, '.tmp/deno/node_modules/.bin/deno');

test('under Deno /console, its script and /docs are served as under Node', {
  skip: !existsSync(DENO) && 'deno not installed: npm install --prefix .tmp/deno deno@2',
  timeout: 120_000,
}, async () => {
  const s = await startService(
    ['run', '-A', '--quiet', 'src/deno.ts'],
    { DATA_DIR: ':memory:', DENO_NO_UPDATE_CHECK: '1' },
    90_000,
    ROOT,
    DENO,
  );
  try {
    const page = await fetch(`${s.url}/console`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.match(await page.text(), new RegExp(`src="/console/assets/${CONSOLE_JS}"`));
    const js = await fetch(`${s.url}/console/assets/${CONSOLE_JS}`);
    assert.equal(await js.text(), ASSETS[CONSOLE_JS].body);
    const docs = await fetch(`${s.url}/docs`);
    assert.match(await docs.text(), /<h1>Escrow settlement service/);
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
});
