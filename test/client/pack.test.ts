// The published client package works for someone outside this repository (README.md "The client package"): the
// same steps as .ci/pack-check.sh (test/client/packCheck.ts), asserted one by one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { foreignImports, OLDEST_TS, packCheck, PROTOCOL_DEPENDENCIES, protocolDependencies, readPackageJson } from './packCheck.ts';

test('the client package declares ESM with types, a bin, and only the protocol package as a dependency', () => {
  const pkg = readPackageJson();
  assert.equal(pkg.name, '@escrow-settlement/client');
  assert.equal(pkg.type, 'module');
  assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['@escrow-settlement/protocol']);
  assert.equal(pkg.exports['.'].types, './dist/index.d.ts');
  assert.equal(pkg.exports['.'].default, './dist/index.js');
  assert.equal(pkg.bin['escrow-settlement'], './dist/bin.js');
  assert.equal(pkg.private, undefined);
  assert.ok(pkg.files.includes('LICENSE'), 'the license travels with the tarball');
  // npm 11 warns about, and skips, a dependency's install scripts: the tarball must need none.
  for (const s of ['preinstall', 'install', 'postinstall', 'prepare']) assert.equal(pkg.scripts?.[s], undefined, `no ${s} script`);
});

test('the protocol package depends on @noble/* alone', () => {
  const declared = protocolDependencies();
  assert.ok(declared.length > 0 && declared.every((d) => d.startsWith('@noble/')), declared.join(' '));
});

test('npm pack → install into an empty directory → the CLI verifies a service bundle → tsc --strict compiles a consumer', {
  timeout: 300_000,
}, async () => {
  const r = await packCheck();
  assert.ok(r.files.includes('dist/index.js') && r.files.includes('dist/index.d.ts') && r.files.includes('dist/bin.js'), r.files.join(' '));
  assert.deepEqual(
    r.files.filter((f) => !/^(dist\/|package\.json$|README\.md$|LICENSE$)/.test(f)),
    [],
    'nothing but dist/, package.json, README.md and LICENSE',
  );
  assert.ok(r.files.includes('LICENSE'), 'LICENSE is packed');
  assert.deepEqual(
    foreignImports(),
    [],
    'the built client imports only itself, the protocol package, @noble/* and node: builtins (and the optional MCP SDK from dist/mcp/)',
  );
  assert.deepEqual(
    foreignImports(fileURLToPath(new URL('../../packages/protocol/dist', import.meta.url)), PROTOCOL_DEPENDENCIES),
    [],
    'the protocol package imports only itself and the @noble/* packages it declares',
  );
  // The MCP SDK is an optional peer dependency: not installed with the package, and its absence explained.
  assert.equal(r.mcpWithoutSdk.code, 2, r.mcpWithoutSdk.err);
  assert.match(r.mcpWithoutSdk.err, /npm install @modelcontextprotocol\/sdk/);

  assert.equal(r.trusted.code, 0, r.trusted.out + r.trusted.err);
  assert.match(r.trusted.out, /^PASS proof.issuer.trusted: /m);
  // 11 issuer/trail/log checks, the service bundle's one party signature (its delivery), parties.complete
  // and the verdict's replay, then the served checkpoint's signature and the proof's inclusion in it.
  assert.match(r.trusted.out, /^PASS parties\[0\]\.delivery: /m);
  assert.match(r.trusted.out, /^PASS verdict\.replay: /m);
  assert.match(r.trusted.out, /^PASS checkpoint\.inclusion: /m);
  assert.match(r.trusted.out, /^OK: all 17 checks passed$/m);
  assert.equal(r.issuerDoc.code, 0, r.issuerDoc.out + r.issuerDoc.err);
  assert.equal(r.untrusted.code, 1, r.untrusted.out);
  assert.match(r.untrusted.out, /^FAIL issuer.trust: no trusted issuer key given/m);
  assert.equal(r.bundleKeys.code, 0, r.bundleKeys.out);
  assert.match(r.bundleKeys.err, /WARNING: trusting the issuer keys inside the bundle/);

  assert.equal(r.tsc.code, 0, `tsc --strict on the consumer:\n${r.tsc.out}${r.tsc.err}`);
  assert.equal(r.tscOldest.code, 0, `tsc ${OLDEST_TS} (module node16) on the consumer:\n${r.tscOldest.out}${r.tscOldest.err}`);
  assert.equal(r.runtimeImport.out.trim(), 'ok', r.runtimeImport.out + r.runtimeImport.err);
});
