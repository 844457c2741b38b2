// Deployment artefacts: the systemd unit verifies, and the Dockerfile lints and its exact build,
// start and health-check commands work outside Docker (no engine on these machines).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate } from 'dockerfile-utils';
import { ROOT, startService } from '../process/proc.ts';

const unit = readFileSync(join(ROOT, 'systemd/escrow-settlement.service'), 'utf8');
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

test('the systemd unit passes systemd-analyze verify', () => {
  const r = spawnSync('systemd-analyze', ['verify', join(ROOT, 'systemd/escrow-settlement.service')], { encoding: 'utf8' });
  assert.equal(r.error, undefined, 'systemd-analyze must be installed (.ci/run installs it)');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), '');
});

test('the systemd unit runs the bundle with node, restarts on failure, stops with SIGTERM and is hardened', () => {
  for (const line of [
    'ExecStart=/usr/bin/env node /opt/escrow-settlement/dist/escrow-settlement.mjs',
    'EnvironmentFile=-/etc/escrow-settlement/env', 'Restart=on-failure', 'KillSignal=SIGTERM', 'DynamicUser=yes',
    'StateDirectory=escrow-settlement', 'ProtectSystem=strict', 'PrivateTmp=yes', 'NoNewPrivileges=yes',
  ]) assert.ok(unit.split('\n').includes(line), `unit has ${line}`);
  assert.match(unit, /DATA_DIR=\/var\/lib\/escrow-settlement/);
});

test('the Dockerfile lints clean and has the shape operators expect', () => {
  const problems = validate(dockerfile);
  assert.deepEqual(problems.map((p) => `${p.range.start.line + 1}: ${p.message}`), []);
  assert.equal((dockerfile.match(/^FROM /gm) ?? []).length, 2, 'multi-stage');
  assert.match(dockerfile, /^FROM node:20-bookworm-slim AS build$/m);
  assert.match(dockerfile, /^USER node$/m);
  assert.match(dockerfile, /^EXPOSE 4280$/m);
  assert.match(dockerfile, /^VOLUME \["\/data"\]$/m);
  assert.match(dockerfile, /^HEALTHCHECK .*\n.*\/health/m);
  assert.match(dockerfile, /^CMD \["node", "dist\/escrow-settlement\.mjs"\]$/m);
});

/** The RUN lines of a stage, and the runtime stage's CMD and HEALTHCHECK, as written in the Dockerfile. */
function commands() {
  const joined = dockerfile.replace(/\\\n/g, ' ');
  const runs = [...joined.matchAll(/^RUN (.+)$/gm)].map((m) => m[1].trim());
  const cmd = JSON.parse(/^CMD (\[.+\])$/m.exec(joined)![1]) as string[];
  const health = JSON.parse(/^HEALTHCHECK .*? CMD (\[.+\])$/m.exec(joined)![1]) as string[];
  return { runs, cmd, health };
}

test('the Dockerfile\'s own build, start and health-check commands work outside Docker, from dist/ alone', { timeout: 300_000 }, async () => {
  const { runs, cmd, health } = commands();
  assert.deepEqual(runs.slice(0, 2), ['npm ci --no-audit --no-fund', 'npm run build']);
  const build = mkdtempSync(join(tmpdir(), 'escrow-build-'));
  const run = mkdtempSync(join(tmpdir(), 'escrow-run-'));
  try {
    // Stage 1: exactly the files the Dockerfile copies, then its RUN lines.
    for (const f of ['package.json', 'package-lock.json', 'client/package.json', 'client/tsconfig.json', 'client/src', 'tsconfig.json', 'build.mjs', 'src']) cpSync(join(ROOT, f), join(build, f), { recursive: true });
    for (const line of runs.slice(0, 2)) execFileSync('sh', ['-c', line], { cwd: build, stdio: 'pipe', env: { ...process.env, NODE_V8_COVERAGE: '' } });
    // Stage 2: only dist/, no node_modules anywhere near it.
    cpSync(join(build, 'dist'), join(run, 'dist'), { recursive: true });
    const s = await startService(cmd.slice(1), { PORT: '0', HOST: '127.0.0.1', DATA_DIR: join(run, 'data'), NODE_ENV: 'production' }, 60_000, run);
    try {
      const port = new URL(s.url).port;
      const hc = spawnSync(health[0], health.slice(1), { env: { PATH: process.env.PATH, PORT: port }, encoding: 'utf8' });
      assert.equal(hc.status, 0, hc.stderr);
    } finally {
      assert.equal(await s.stop(), 0, s.stderr());
    }
  } finally {
    rmSync(build, { recursive: true, force: true });
    rmSync(run, { recursive: true, force: true });
  }
});
