// CLI entry for .ci/pack-check.sh: runs the client package check and exits non-zero on any failure.
import { fileURLToPath } from 'node:url';
import { foreignImports, OLDEST_TS, packCheck, PROTOCOL_DEPENDENCIES } from './packCheck.ts';

const problems: string[] = [];
const r = await packCheck((line) => console.log(`pack-check: ${line}`));
console.log(`pack-check: ${r.files.length} files in the tarball: ${r.files.join(' ')}`);
if (r.files.some((f) => !/^(dist\/|package\.json$|README\.md$|LICENSE$)/.test(f)))
  problems.push('the tarball holds files outside dist/, package.json, README.md and LICENSE');
if (!r.files.includes('LICENSE')) problems.push('the tarball has no LICENSE');
for (const bad of foreignImports()) problems.push(`import outside the package: ${bad}`);
for (const bad of foreignImports(fileURLToPath(new URL('../../packages/protocol/dist', import.meta.url)), PROTOCOL_DEPENDENCIES))
  problems.push(`import outside the protocol package: ${bad}`);
if (r.trusted.code !== 0 || !/^OK: all \d+ checks passed$/m.test(r.trusted.out))
  problems.push(`CLI with --trusted-key: exit ${r.trusted.code}\n${r.trusted.out}${r.trusted.err}`);
if (r.issuerDoc.code !== 0) problems.push(`CLI with --issuer-doc: exit ${r.issuerDoc.code}\n${r.issuerDoc.out}${r.issuerDoc.err}`);
if (r.untrusted.code !== 1 || !/^FAIL issuer.trust: /m.test(r.untrusted.out))
  problems.push(`CLI without a trusted key should fail issuer.trust: exit ${r.untrusted.code}\n${r.untrusted.out}`);
if (r.bundleKeys.code !== 0 || !/WARNING/.test(r.bundleKeys.err))
  problems.push(`CLI with --trust-bundle-keys should pass with a warning: exit ${r.bundleKeys.code}\n${r.bundleKeys.err}`);
if (r.tsc.code !== 0) problems.push(`tsc --strict on the consumer: exit ${r.tsc.code}\n${r.tsc.out}${r.tsc.err}`);
if (r.tscOldest.code !== 0)
  problems.push(`tsc ${OLDEST_TS} on the consumer: exit ${r.tscOldest.code}\n${r.tscOldest.out}${r.tscOldest.err}`);
if (r.mcpWithoutSdk.code !== 2 || !/npm install @modelcontextprotocol\/sdk/.test(r.mcpWithoutSdk.err))
  problems.push(
    `escrow-settlement mcp without the optional MCP SDK should explain it: exit ${r.mcpWithoutSdk.code}\n${r.mcpWithoutSdk.err}`,
  );
if (r.runtimeImport.out.trim() !== 'ok')
  problems.push(`importing the installed package and verifying: ${r.runtimeImport.out}${r.runtimeImport.err}`);
for (const p of problems) console.error(`pack-check: FAIL ${p}`);
console.log(problems.length ? `pack-check: ${problems.length} problem(s)` : 'pack-check: ok');
process.exitCode = problems.length ? 1 : 0;
