// The published client package works for someone outside this repository (issue 18 item 2): the
// same steps as .ci/pack-check.sh (test/client/packCheck.ts), asserted one by one.
import { test } from 'node:test';
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { foreignImports, packCheck, readPackageJson } from './packCheck.ts';

test('the client package declares ESM with types, a bin, and only @noble/* as dependencies', () => {
  const pkg = readPackageJson();
  assert.equal(pkg.name, '@escrow-settlement/client');
  assert.equal(pkg.type, 'module');
  assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['@noble/ed25519', '@noble/hashes']);
  assert.equal(pkg.exports['.'].types, './dist/index.d.ts');
  assert.equal(pkg.exports['.'].default, './dist/index.js');
  assert.equal(pkg.bin['escrow-settlement'], './dist/bin.js');
  assert.equal(pkg.private, undefined);
  assert.ok(pkg.files.includes('LICENSE'), 'the license travels with the tarball');
  // npm 11 warns about, and skips, a dependency's install scripts: the tarball must need none.
  for (const s of ['preinstall', 'install', 'postinstall', 'prepare']) assert.equal(pkg.scripts?.[s], undefined, `no ${s} script`);
});

test('npm pack → install into an empty directory → the CLI verifies a service bundle → tsc --strict compiles a consumer', { timeout: 300_000 }, async () => {
  const r = await packCheck();
  assert.ok(r.files.includes('dist/index.js') && r.files.includes('dist/index.d.ts') && r.files.includes('dist/bin.js'), r.files.join(' '));
  assert.deepEqual(r.files.filter((f) => !/^(dist\/|package\.json$|README\.md$|LICENSE$)/.test(f)), [], 'nothing but dist/, package.json, README.md and LICENSE');
  if (existsSync(new URL('../../client/LICENSE', import.meta.url))) assert.ok(r.files.includes('LICENSE'), 'client/LICENSE is packed');
  assert.deepEqual(foreignImports(), [], 'the built package imports only itself, @noble/* and node: builtins');

  assert.equal(r.trusted.code, 0, r.trusted.out + r.trusted.err);
  assert.match(r.trusted.out, /^PASS proof.issuer.trusted: /m);
  // 11 issuer/trail/log checks, then the service bundle's one party signature (its delivery) and parties.complete.
  assert.match(r.trusted.out, /^PASS parties\[0\]\.delivery: /m);
  assert.match(r.trusted.out, /^OK: all 13 checks passed$/m);
  assert.equal(r.issuerDoc.code, 0, r.issuerDoc.out + r.issuerDoc.err);
  assert.equal(r.untrusted.code, 1, r.untrusted.out);
  assert.match(r.untrusted.out, /^FAIL issuer.trust: no trusted issuer key given/m);
  assert.equal(r.bundleKeys.code, 0, r.bundleKeys.out);
  assert.match(r.bundleKeys.err, /WARNING: trusting the issuer keys inside the bundle/);

  assert.equal(r.tsc.code, 0, `tsc --strict on the consumer:\n${r.tsc.out}${r.tsc.err}`);
  assert.equal(r.runtimeImport.out.trim(), 'ok', r.runtimeImport.out + r.runtimeImport.err);
});
