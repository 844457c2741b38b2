// Deployment artefacts: the systemd unit verifies, and the Dockerfile lints and its exact build,
// start and health-check commands work outside Docker (no engine on these machines).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate } from 'dockerfile-utils';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { publicKeyOf } from '@escrow-settlement/protocol/crypto/ed25519';
import { ROOT, startService, TSX } from '../process/proc.ts';

const unit = readFileSync(join(ROOT, 'systemd/escrow-settlement.service'), 'utf8');
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
/** What the bundle may contain: the runtime dependencies and what they depend on. */
/** The runtime dependencies and, transitively, theirs (the MCP SDK brings its JSON Schema validator). */
function runtimeClosure(names: string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [...names];
  while (todo.length) {
    const name = todo.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const file = join(ROOT, 'node_modules', name, 'package.json');
    if (existsSync(file)) todo.push(...Object.keys(JSON.parse(readFileSync(file, 'utf8')).dependencies ?? {}));
  }
  return seen;
}
const RUNTIME_PACKAGES = runtimeClosure([...Object.keys(pkg.dependencies), 'hono']);

test('the systemd unit passes systemd-analyze verify', () => {
  const r = spawnSync('systemd-analyze', ['verify', join(ROOT, 'systemd/escrow-settlement.service')], { encoding: 'utf8' });
  assert.equal(r.error, undefined, 'systemd-analyze must be installed (.ci/run installs it)');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), '');
});

test('the systemd unit hands the keys over by LoadCredential, and the service started as the unit says reads them from %d', {
  timeout: 120_000,
}, async () => {
  const creds = [...unit.matchAll(/^LoadCredential=([^:\n]+):(\S+)$/gm)].map((m) => ({ id: m[1], from: m[2] }));
  assert.deepEqual(
    creds.map((c) => c.id),
    ['issuer.key', 'webhook.key'],
  );
  const envLine = unit.split('\n').find((l) => l.startsWith('Environment=ISSUER_KEY='));
  assert.ok(envLine, 'ISSUER_KEY and WEBHOOK_KEY point into the credentials directory');
  // systemd copies each credential into $CREDENTIALS_DIRECTORY (mode 0400, the service's user), and
  // expands %d to that directory.
  const dir = mkdtempSync(join(tmpdir(), 'escrow-creds-'));
  try {
    const made = spawnSync(process.execPath, [...TSX, 'keys', 'generate', '--out', join(dir, 'etc')], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    const credentials = join(dir, 'credentials');
    mkdirSync(credentials, { mode: 0o700 });
    for (const c of creds) {
      cpSync(join(dir, 'etc', c.from.split('/').pop()!), join(credentials, c.id));
      chmodSync(join(credentials, c.id), 0o400);
    }
    const env = Object.fromEntries(
      [...envLine!.slice('Environment='.length).matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2].replaceAll('%d', credentials)]),
    );
    const s = await startService(TSX, { ...env, DATA_DIR: ':memory:' }, 90_000);
    try {
      const seed = readFileSync(join(credentials, 'issuer.key'), 'utf8').trim().split('+').slice(4).join('+');
      assert.equal((await (await fetch(`${s.url}/health`)).json()).issuer, toHex(publicKeyOf(Buffer.from(seed, 'base64').subarray(1))));
    } finally {
      assert.equal(await s.stop(), 0, s.stderr());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the systemd unit runs the bundle with node, restarts on failure, stops with SIGTERM and is hardened', () => {
  for (const line of [
    'ExecStart=/usr/bin/env node /opt/escrow-settlement/dist/escrow-settlement.mjs',
    'EnvironmentFile=-/etc/escrow-settlement/env',
    'Restart=on-failure',
    'KillSignal=SIGTERM',
    'DynamicUser=yes',
    'StateDirectory=escrow-settlement',
    'ProtectSystem=strict',
    'PrivateTmp=yes',
    'NoNewPrivileges=yes',
  ])
    assert.ok(unit.split('\n').includes(line), `unit has ${line}`);
  assert.match(unit, /DATA_DIR=\/var\/lib\/escrow-settlement/);
});

/** The Dockerfile's stages: each FROM line and the instructions under it (continuations joined). */
function stages(): Array<{ from: string; lines: string[] }> {
  const out: Array<{ from: string; lines: string[] }> = [];
  for (const line of dockerfile.replace(/\\\n\s*/g, ' ').split('\n')) {
    if (/^FROM /.test(line)) out.push({ from: line, lines: [] });
    else if (/^[A-Z]+ /.test(line)) out.at(-1)!.lines.push(line);
  }
  return out;
}

test('the Dockerfile lints clean and has the shape operators expect', () => {
  const problems = validate(dockerfile);
  assert.deepEqual(
    problems.map((p) => `${p.range.start.line + 1}: ${p.message}`),
    [],
  );
  const [build, runtime, ...more] = stages();
  assert.equal(more.length, 0, 'two stages');
  // One exact Node release for both stages (no floating tag such as node:20-bookworm-slim).
  assert.match(build.from, /^FROM node:\d+\.\d+\.\d+-bookworm-slim AS build$/);
  assert.equal(runtime.from, build.from.replace(/ AS build$/, ''));
  assert.match(dockerfile, /^EXPOSE 4280$/m);
  assert.match(dockerfile, /^VOLUME \["\/data"\]$/m);
  assert.match(dockerfile, /^HEALTHCHECK .*\n.*\/health/m);
  assert.match(dockerfile, /^CMD \["node", "dist\/escrow-settlement\.mjs"\]$/m);
});

test('the runtime stage copies only the bundle from the build stage and runs as the unprivileged node user', () => {
  const runtime = stages()[1].lines;
  assert.deepEqual(
    runtime.filter((l) => /^(COPY|ADD) /.test(l)),
    ['COPY --from=build /app/dist ./dist'],
    'no node_modules, no sources',
  );
  const users = runtime.filter((l) => l.startsWith('USER '));
  assert.deepEqual(users, ['USER node']);
  assert.ok(runtime.indexOf('USER node') < runtime.findIndex((l) => l.startsWith('CMD ')), 'USER node comes before CMD');
  assert.ok(!runtime.some((l) => /^RUN .*npm/.test(l)), 'nothing is installed in the runtime stage');
});

/** The RUN lines, the runtime stage's ENV, and its CMD and HEALTHCHECK, as written in the Dockerfile. */
function commands() {
  const joined = dockerfile.replace(/\\\n/g, ' ');
  const runs = [...joined.matchAll(/^RUN (.+)$/gm)].map((m) => m[1].trim());
  const cmd = JSON.parse(/^CMD (\[.+\])$/m.exec(joined)![1]) as string[];
  const health = JSON.parse(/^HEALTHCHECK .*? CMD (\[.+\])$/m.exec(joined)![1]) as string[];
  const envLine = stages()[1].lines.find((l) => l.startsWith('ENV '))!;
  const env = Object.fromEntries([...envLine.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  return { runs, cmd, health, env };
}

test("the Dockerfile's own build, start and health-check commands work outside Docker, from dist/ alone, under its start-up rule", {
  timeout: 300_000,
}, async () => {
  const { runs, cmd, health, env } = commands();
  assert.deepEqual(runs.slice(0, 3), ['npm ci --no-audit --no-fund --ignore-scripts', 'npm run build:client', 'npm run build']);
  assert.deepEqual(env, { NODE_ENV: 'production', PORT: '4280', HOST: '0.0.0.0', DATA_DIR: '/data' });
  const build = mkdtempSync(join(tmpdir(), 'escrow-build-'));
  const run = mkdtempSync(join(tmpdir(), 'escrow-run-'));
  try {
    // Stage 1: exactly the files the Dockerfile copies, then its RUN lines.
    for (const f of [
      'package.json',
      'package-lock.json',
      'packages/protocol/package.json',
      'packages/protocol/tsconfig.json',
      'packages/protocol/src',
      'packages/client/package.json',
      'packages/client/tsconfig.json',
      'packages/client/src',
      'tsconfig.json',
      'build.mjs',
      'src',
    ])
      cpSync(join(ROOT, f), join(build, f), { recursive: true });
    for (const line of runs.slice(0, 3))
      execFileSync('sh', ['-c', line], { cwd: build, stdio: 'pipe', env: { ...process.env, NODE_V8_COVERAGE: '' } });
    // Stage 2: only dist/, no node_modules anywhere near it; none of the dev tools made it into the bundle.
    cpSync(join(build, 'dist'), join(run, 'dist'), { recursive: true });
    assert.deepEqual(readdirSync(join(run, 'dist')).sort(), [
      'escrow-settlement.mjs',
      'escrow-settlement.mjs.map',
      'initdb.wasm',
      'pglite.data',
      'pglite.wasm',
    ]);
    const sources = JSON.parse(readFileSync(join(run, 'dist/escrow-settlement.mjs.map'), 'utf8')).sources as string[];
    // Packages the bundle took from node_modules/ (PGlite's own source map adds paths of its
    // internal packages that are not installed; only installed ones are counted).
    const packages = [
      ...new Set(sources.map((s) => /^\.\.\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(s)?.[1]).filter((p): p is string => !!p)),
    ]
      .filter((p) => existsSync(join(build, 'node_modules', p, 'package.json')))
      .sort();
    assert.deepEqual(
      packages.filter((p) => !RUNTIME_PACKAGES.has(p)),
      [],
      'only runtime dependencies are bundled',
    );
    assert.ok(packages.includes('postgres') && packages.includes('@electric-sql/pglite'));
    assert.ok(!packages.some((p) => /ganache|solc|typescript|esbuild|tsx/.test(p)), 'no development tool is in the bundle');

    // The image's environment as the Dockerfile sets it (DATA_DIR in a temp dir, PORT 0 to share the machine).
    const imageEnv = { ...env, PORT: '0', DATA_DIR: join(run, 'data') };
    const refused = spawnSync(process.execPath, cmd.slice(1), {
      cwd: run,
      env: { PATH: process.env.PATH, ...imageEnv },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(refused.status, 1, 'no API_KEY on 0.0.0.0: refused');
    assert.deepEqual(refused.stderr.trim().split('\n'), [
      'escrow-settlement: bad configuration: HOST: 0.0.0.0 is not a loopback address and API_KEY is not set: that would serve an open sandbox to the network; set API_KEY, or SANDBOX_PUBLIC=1 to do it on purpose',
    ]);
    // The keys from the secret mount the Dockerfile documents: its /run/secrets here is a directory of
    // 0600 files made by the bundle's own `keys generate`.
    const secrets = join(run, 'run/secrets');
    const gen = spawnSync(process.execPath, [...cmd.slice(1), 'keys', 'generate', '--out', secrets], { cwd: run, encoding: 'utf8' });
    assert.equal(gen.status, 0, gen.stderr);
    const mounted = Object.fromEntries(
      [...dockerfile.matchAll(/-e (ISSUER_KEY|WEBHOOK_KEY)=file:\/run\/secrets\/(\S+)/g)].map((m) => [m[1], `file:${join(secrets, m[2])}`]),
    );
    assert.deepEqual(Object.keys(mounted).sort(), ['ISSUER_KEY', 'WEBHOOK_KEY'], 'the Dockerfile documents both keys on the secret mount');
    const issuerSeed = readFileSync(mounted.ISSUER_KEY.slice('file:'.length), 'utf8').trim().split('+').slice(4).join('+');
    const issuerPublic = toHex(publicKeyOf(Buffer.from(issuerSeed, 'base64').subarray(1)));
    // Each on a volume of its own: a database started with the mounted keys refuses to start without them.
    for (const [volume, extra] of [
      ['data-mounted', { API_KEY: 'container-root-key-0123456789', ...mounted }],
      ['data', { SANDBOX_PUBLIC: '1' }],
    ] as Array<[string, Record<string, string>]>) {
      const s = await startService(cmd.slice(1), { ...imageEnv, DATA_DIR: join(run, volume), ...extra }, 60_000, run);
      try {
        const port = new URL(s.url).port;
        const hc = spawnSync(health[0], health.slice(1), { env: { PATH: process.env.PATH, PORT: port }, encoding: 'utf8' });
        assert.equal(hc.status, 0, hc.stderr);
        const issuer = (await (await fetch(`${s.url}/health`)).json()).issuer;
        if (extra.ISSUER_KEY) assert.equal(issuer, issuerPublic, 'signs with the mounted issuer key');
        else assert.ok(existsSync(join(run, 'data/keys/issuer.key')), 'without mounted keys they are generated into /data/keys');
      } finally {
        assert.equal(await s.stop(), 0, s.stderr());
      }
    }
  } finally {
    rmSync(build, { recursive: true, force: true });
    rmSync(run, { recursive: true, force: true });
  }
});
