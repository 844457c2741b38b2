// At start, a key source naming a PKCS#11 module (module-path, module-name) stops the service with
// one line naming the variable, and the library it names is never loaded: the module is
// PKCS11_MODULE alone (docs/keys.md "PKCS#11"). A real shared library whose constructor writes a
// marker file shows it. Rotation and stored eras: test/node/pkcs11Module.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markerLib } from '../node/markerLib.ts';
import { failsNaming, run, TSX } from './proc.ts';

test('a start-up key source naming module-path or module-name exits with one line naming the variable and loads nothing', {
  timeout: 300_000,
}, async () => {
  const lib = markerLib();
  const dir = mkdtempSync(join(tmpdir(), 'pkcs11-module-'));
  try {
    const r = await run([...TSX, 'keys', 'generate', '--out', dir]);
    assert.equal(r.code, 0, r.stderr);
    const files = { ISSUER_KEY: `file:${join(dir, 'issuer.key')}`, WEBHOOK_KEY: `file:${join(dir, 'webhook.key')}` };
    const env = { DATA_DIR: ':memory:' };
    await failsNaming(
      { ...env, ...files, ISSUER_KEY: `pkcs11:object=issuer?module-path=${lib.path}` },
      'ISSUER_KEY',
      /pkcs11: URI names module-path: the PKCS#11 module is PKCS11_MODULE alone/,
    );
    assert.equal(lib.loaded(), false, 'ISSUER_KEY loaded the library');
    await failsNaming(
      { ...env, ...files, WEBHOOK_KEY: `pkcs11:object=webhook?module-path=${encodeURIComponent(lib.path)}`, PKCS11_MODULE: '' },
      'WEBHOOK_KEY',
      /pkcs11: URI names module-path/,
    );
    await failsNaming(
      { ...env, ...files, ISSUER_KEY: 'pkcs11:object=issuer?module-name=marker' },
      'ISSUER_KEY',
      /pkcs11: URI names module-name/,
    );
    assert.equal(lib.loaded(), false, 'the library was loaded');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
