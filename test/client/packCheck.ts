// The client package as an outsider gets it (README.md "The client package"): `npm pack` in packages/protocol and packages/client, the tarball
// installed into an empty directory, its `escrow-settlement` CLI run on a bundle the service issued,
// and a TypeScript consumer compiled with `tsc --strict` against the installed declarations.
// Shared by test/client/pack.test.ts and .ci/pack-check.sh (through test/client/packCheckRun.ts).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeHarness } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLIENT = join(ROOT, 'packages/client');
const PROTOCOL = join(ROOT, 'packages/protocol');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
// Child processes must not inherit the test runner's coverage or loader settings.
const ENV = { ...process.env, NODE_V8_COVERAGE: '', NODE_OPTIONS: '' };

export interface Run {
  code: number | null;
  out: string;
  err: string;
}

function run(cmd: string, args: string[], cwd: string): Run {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: ENV, timeout: 180_000 });
  if (r.error) throw r.error;
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function must(cmd: string, args: string[], cwd: string): string {
  const r = run(cmd, args, cwd);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}\n${r.out}\n${r.err}`);
  return r.out;
}

/** A settled escrow's offline bundle and the issuer document, fetched from the service in-process. */
export async function serviceBundle(): Promise<{ bundle: unknown; issuerDoc: { keys: Array<{ publicKey: string }> } }> {
  const h = await makeHarness('pglite');
  try {
    const ok = async (method: string, path: string, body?: unknown) => {
      const r = await h.req(method, path, body);
      if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
      return r.body;
    };
    const payer = await ok('POST', '/v1/agents', { label: 'payer' });
    const payee = await ok('POST', '/v1/agents', { label: 'payee' });
    const e = await ok('POST', '/v1/escrows', {
      amount: '10',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payeeAgentId: payee.id,
    });
    await ok('POST', `/v1/escrows/${e.id}/fund`);
    const d = await ok('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 'packed' } });
    return { bundle: await ok('GET', `/v1/proofs/${d.proof.id}/bundle`), issuerDoc: await ok('GET', '/.well-known/proof-issuer.json') };
  } finally {
    await h.close();
  }
}

const CONSUMER_TS = `// A consumer of the published package, compiled with tsc --strict against its .d.ts only.
import { createClient, generateKeys, signDelivery, verifyBundle, type Bundle, type VerifyResult } from '@escrow-settlement/client';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';

export function audit(bundle: Bundle, pinned: string): VerifyResult {
  return verifyBundle(bundle, { trustedKeys: [pinned] });
}

export const api = createClient({ baseUrl: 'http://127.0.0.1:4280' });
const keys = generateKeys();
export const delivery: string = canonicalize(signDelivery(keys.secretKey, { escrowId: 'esc_x', payload: { title: 't' } }));

// @ts-expect-error trustedKeys is a list of keys, not a number: the declarations are precise.
verifyBundle({} as Bundle, { trustedKeys: 5 });
`;

/** The oldest TypeScript whose compiler reads the declarations (packages/client/README.md says so). */
export const OLDEST_TS = '5.0';

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    lib: ['es2023', 'dom'],
    types: [],
    skipLibCheck: false,
  },
  files: ['consumer.ts'],
};

export interface PackReport {
  tarball: string;
  files: string[];
  trusted: Run;
  issuerDoc: Run;
  untrusted: Run;
  bundleKeys: Run;
  tsc: Run;
  /** The same consumer compiled by the oldest TypeScript the client README names (5.0, module node16). */
  tscOldest: Run;
  runtimeImport: Run;
  /** `escrow-settlement mcp` where the optional MCP SDK is not installed. */
  mcpWithoutSdk: Run;
}

/** Every step; throws when packing or installing fails, returns what each check printed. */
export async function packCheck(log: (line: string) => void = () => {}): Promise<PackReport> {
  const tmp = mkdtempSync(join(tmpdir(), 'escrow-pack-'));
  try {
    log(`npm pack in ${PROTOCOL} and ${CLIENT}`);
    type Packed = Array<{ filename: string; files: Array<{ path: string }> }>;
    const protocol = JSON.parse(must('npm', ['pack', '--json', '--pack-destination', tmp], PROTOCOL)) as Packed;
    const packed = JSON.parse(must('npm', ['pack', '--json', '--pack-destination', tmp], CLIENT)) as Packed;
    const tarball = join(tmp, packed[0].filename);
    const files = packed[0].files.map((f) => f.path).sort();

    const dir = join(tmp, 'consumer');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    log(`npm install ${tarball} (with the protocol package's tarball) into an empty directory`);
    must('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(tmp, protocol[0].filename), tarball], dir);

    const { bundle, issuerDoc } = await serviceBundle();
    writeFileSync(join(dir, 'bundle.json'), JSON.stringify(bundle, null, 2));
    writeFileSync(join(dir, 'issuer.json'), JSON.stringify(issuerDoc));
    const pinned = issuerDoc.keys[issuerDoc.keys.length - 1].publicKey;
    const bin = join(dir, 'node_modules/.bin/escrow-settlement');
    log('escrow-settlement verify bundle.json (pinned key, issuer document, no trust, bundle keys)');
    const trusted = run(bin, ['verify', 'bundle.json', '--trusted-key', pinned], dir);
    const issuerDocRun = run(bin, ['verify', 'bundle.json', '--issuer-doc', 'issuer.json'], dir);
    const untrusted = run(bin, ['verify', 'bundle.json'], dir);
    const bundleKeys = run(bin, ['verify', 'bundle.json', '--trust-bundle-keys'], dir);
    const mcpWithoutSdk = run(bin, ['mcp', '--url', 'http://127.0.0.1:1'], dir);

    writeFileSync(join(dir, 'consumer.ts'), CONSUMER_TS);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
    log('tsc --strict against the installed package');
    const tsc = run(process.execPath, [TSC, '-p', 'tsconfig.json', '--strict'], dir);
    log(`tsc ${OLDEST_TS} (module node16) against the installed package`);
    const old = join(tmp, 'oldest-ts');
    mkdirSync(old);
    writeFileSync(join(old, 'package.json'), JSON.stringify({ name: 'oldest-ts', private: true }));
    must('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `typescript@${OLDEST_TS}`], old);
    writeFileSync(
      join(dir, 'tsconfig.oldest.json'),
      JSON.stringify({
        ...CONSUMER_TSCONFIG,
        compilerOptions: { ...CONSUMER_TSCONFIG.compilerOptions, module: 'node16', moduleResolution: 'node16' },
      }),
    );
    const tscOldest = run(process.execPath, [join(old, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.oldest.json'], dir);
    const runtimeImport = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('@escrow-settlement/client'); const b = JSON.parse((await import('node:fs')).readFileSync('bundle.json', 'utf8'));" +
          " const d = JSON.parse((await import('node:fs')).readFileSync('issuer.json', 'utf8'));" +
          ' const r = m.verifyBundle(b, { trustedKeys: d.keys }); console.log(r.ok ? "ok" : JSON.stringify(r.checks));',
      ],
      dir,
    );
    return { tarball, files, trusted, issuerDoc: issuerDocRun, untrusted, bundleKeys, tsc, tscOldest, runtimeImport, mcpWithoutSdk };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Only the x402/authCapture subpath may use the optional @x402/core peer (types only); the core index never loads it. */
const OPTIONAL_PEER_FILES = /^x402[/]authCapture/;

/**
 * Every module specifier in the built package: relative ones must stay inside dist/, bare ones may
 * only be @noble/*, node:* builtins, (from the client) the protocol package, and the MCP SDK (an optional peer
 * dependency) in dist/mcp/ only. Returns the offending "file: specifier" lines.
 */
export function foreignImports(distDir = join(CLIENT, 'dist'), allowed = /^@escrow-settlement\/protocol(\/|$)/): string[] {
  const bad: string[] = [];
  for (const f of readdirSync(distDir, { recursive: true }) as string[]) {
    if (!/\.(js|d\.ts)$/.test(f)) continue;
    const text = readFileSync(join(distDir, f), 'utf8');
    for (const m of text.matchAll(/(?:from\s*|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)) {
      const spec = m[1];
      if (spec.startsWith('.')) {
        const target = resolve(dirname(join(distDir, f)), spec);
        if (!target.startsWith(resolve(distDir) + sep)) bad.push(`${f}: ${spec}`);
      } else if (
        !/^@noble\/(ed25519|hashes)(\/|$)/.test(spec) &&
        !allowed.test(spec) &&
        !spec.startsWith('node:') &&
        !(f.startsWith(`mcp${sep}`) && spec.startsWith('@modelcontextprotocol/sdk/')) &&
        !(OPTIONAL_PEER_FILES.test(f) && /^@x402\/core(\/|$)/.test(spec))
      ) {
        bad.push(`${f}: ${spec}`);
      }
    }
  }
  return bad;
}

/** The dependencies the protocol package declares (all of them @noble/*, a test checks). */
export const protocolDependencies = (): string[] =>
  Object.keys(JSON.parse(readFileSync(new URL('../../packages/protocol/package.json', import.meta.url), 'utf8')).dependencies);

/** What the protocol package's dist/ may import besides itself: the packages it declares. */
export const PROTOCOL_DEPENDENCIES = new RegExp(
  `^(${protocolDependencies()
    .map((d) => d.replace(/[/.]/g, '\\$&'))
    .join('|')})(/|$)`,
);

export const readPackageJson = () => JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8'));
