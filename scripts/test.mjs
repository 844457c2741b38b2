#!/usr/bin/env node
// The test runner behind `npm test` and `npm run test:e2e` (docs/testing.md says which runs what).
//
//   node scripts/test.mjs              the fast group: every test file but the end-to-end ones, files
//                                      in parallel, under c8 with package.json's coverage threshold
//   node scripts/test.mjs --e2e        the end-to-end group: real processes, the browser, ganache,
//                                      npm pack; one file at a time (they build dist/, start
//                                      chromium and chains, and time their own start-ups)
//   node scripts/test.mjs FILE...      just those files (no coverage check)
//
// The TAP goes to stdout as before; after it (and after c8's table) comes a short summary written by
// scripts/test-summary.mjs: the counts, each failure under its file, why tests were skipped, the
// slowest files, and how long the run took. TEST_CONCURRENCY overrides how many files run at once.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
process.chdir(ROOT);

/**
 * The end-to-end files: each starts the service or another program as a child process, drives a
 * browser, runs a chain, or packs and installs a package. They make up most of the suite's time, and
 * several share dist/ or time their own start-up, so they run apart and one at a time.
 */
const E2E = [
  'test/console/', // chromium against a started service (docs/console.md)
  'test/process/', // the service started as operators do: bundle, workers, start-up failures
  'test/custody/', // ganache and solc: the chain custody
  'test/deploy/', // the Docker image's command, the systemd unit, Deno
  'test/x402/official.test.ts', // x402 v1's client library against the service
  'test/client/pack.test.ts', // npm pack, install into an empty directory, tsc --strict
  'test/bench.test.ts', // the bench in its quick mode
  'test/readme-session.test.ts', // the README's first session against a started service
  'test/admin/requestLog.test.ts', // the request log of a started service
  'test/webhooks/crash.test.ts', // a service killed mid-delivery
];

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith('.test.ts')) out.push(relative(ROOT, path));
  }
  return out.sort();
}

const isE2E = (file) => E2E.some((e) => (e.endsWith('/') ? file.startsWith(e) : file === e));

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean);

function main() {
  const args = process.argv.slice(2);
  const e2e = args.includes('--e2e');
  const named = args.filter((a) => a !== '--e2e');
  const all = testFiles('test');
  for (const f of named) if (!existsSync(f)) fail(`no such test file: ${f}`);
  for (const e of E2E) if (!all.some((f) => (e.endsWith('/') ? f.startsWith(e) : f === e))) fail(`scripts/test.mjs lists ${e} as end-to-end, but no test file matches it`);
  const files = named.length ? named : all.filter((f) => isE2E(f) === e2e);
  const coverage = !named.length && !e2e;
  const concurrency = Number(process.env.TEST_CONCURRENCY) || (e2e ? 1 : Math.max(2, availableParallelism()));

  const label = named.length ? `${files.length} named file(s)` : e2e ? 'the end-to-end group (npm run test:e2e)' : 'the fast group (npm test; the end-to-end files run with npm run test:e2e)';
  console.log(`# ${label}: ${files.length} files, ${concurrency} at a time${coverage ? ', with coverage' : ''}`);
  if (files.some((f) => f.startsWith('test/console/')) && !CHROMIUM.some((p) => existsSync(p)) && !process.env.CI) {
    console.log('# NO CHROMIUM: the console browser tests are skipped; install it with: apt-get install -y chromium fonts-liberation');
  }

  const tmp = mkdtempSync(join(tmpdir(), 'escrow-test-'));
  const summary = join(tmp, 'summary.txt');
  const nodeArgs = ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`,
    '--test-reporter=tap', '--test-reporter-destination=stdout',
    `--test-reporter=${join(ROOT, 'scripts/test-summary.mjs')}`, `--test-reporter-destination=${summary}`, ...files];
  const [cmd, cmdArgs] = coverage ? [join(ROOT, 'node_modules/.bin/c8'), [process.execPath, ...nodeArgs]] : [process.execPath, nodeArgs];
  const started = performance.now();
  const child = spawn(cmd, cmdArgs, { stdio: 'inherit' });
  const forward = (sig) => child.kill(sig);
  process.on('SIGINT', forward).on('SIGTERM', forward);
  child.on('exit', (code, signal) => {
    const s = Math.round((performance.now() - started) / 1000);
    const text = existsSync(summary) ? readFileSync(summary, 'utf8').trim() : '(no summary: the test runner stopped early)';
    rmSync(tmp, { recursive: true, force: true });
    const verdict = code === 0 ? 'PASS' : `FAIL (exit ${code ?? signal})`;
    console.log(`\n==== ${label}\n${text}\n${verdict} in ${Math.floor(s / 60)} min ${s % 60} s`);
    process.exit(code ?? 1);
  });
}

function fail(msg) {
  console.error(`scripts/test.mjs: ${msg}`);
  process.exit(2);
}

main();
