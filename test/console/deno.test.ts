// The console under Deno: src/deno.ts serves the same pages and embedded assets (no fs at run time).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_DENO, startDenoService } from '../process/proc.ts';
import { ASSETS, CONSOLE_JS } from '../../src/console/assets.gen.ts';

test('under Deno /console, its script and /docs are served as under Node', {
  skip: NO_DENO,
  timeout: 120_000,
}, async () => {
  const s = await startDenoService();
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
