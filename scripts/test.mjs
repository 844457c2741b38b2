#!/usr/bin/env node
// The test runner behind `npm test` and `npm run test:e2e` (docs/testing.md says which runs what).
//
//   node scripts/test.mjs              the fast group: every test file but the end-to-end ones, files
//                                      in parallel, then the few that time themselves one at a time;
//                                      coverage over both, checked by c8 with package.json's settings
//   node scripts/test.mjs --e2e        the end-to-end group: real processes, the browser, ganache,
//                                      npm pack; one file at a time (they build dist/, start
//                                      chromium and chains, and time their own start-ups)
//   node scripts/test.mjs FILE...      just those files (no coverage check)
//
// The TAP goes to stdout as before; after it (and after c8's table) comes a short summary written by
// scripts/test-summary.mjs: the counts, each failure under its file, why tests were skipped, the
// slowest files, and how long the run took. TEST_CONCURRENCY overrides how many files run at once.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
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
  'test/console/', // chromium against a started service
  'test/process/', // the service started as operators do: bundle, workers, start-up failures
  'test/custody/', // ganache and solc: the chain custody
  'test/deploy/', // the Docker image's command, the systemd unit, Deno
  'test/x402/official.test.ts', // x402 v1's client library against the service
  'test/client/pack.test.ts', // npm pack, install into an empty directory, tsc --strict
  'test/bench.test.ts', // the bench in its quick mode
  'test/readme-session.test.ts', // the README's first session against a started service
  'test/readme-ap2.test.ts', // the README's AP2 walk-through against a started service
  'test/readme-x402.test.ts', // the README's x402 resource server and payer as child processes
  'test/admin/requestLog.test.ts', // the request log of a started service
  'test/webhooks/crash.test.ts', // a service killed mid-delivery
  'test/mcp/stdio.test.ts', // the stdio MCP server as a child process against a started service
  'test/mcp/deno.test.ts', // /mcp under Deno
  'test/x402/facilitator-docs.test.ts', // the docs' resource server and payer as child processes
  'test/x402/facilitator-flow.test.ts', // @x402/core against a started service, the CLI verifying the proof
  'test/python/regenerate.test.ts', // the Python vectors made afresh by a service in process (about 30 s)
];

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    // test/chain/node_modules (npm run install:chain) ships other projects' tests.
    if (name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith('.test.ts')) out.push(relative(ROOT, path));
  }
  return out.sort();
}

/**
 * Fast files that measure their own timing (a fast webhook receiver served while a slow one hangs, a
 * log answer within 2 s): they run after the parallel phase, one at a time, so another file's CPU
 * use cannot make them miss a bound that holds on an idle machine.
 */
const TIMED = [
  'test/webhooks/concurrency.test.ts',
  'test/webhooks/delivery.test.ts',
  'test/webhooks/transport.test.ts',
  'test/webhooks/pump.test.ts', // the event loop's longest wait while a sender's ticks are slow
  'test/tlog/integrator.test.ts',
  'test/witness/submitter.test.ts', // backoffs of 100-300 ms between rounds
];

const matches = (list, file) => list.some((e) => (e.endsWith('/') ? file.startsWith(e) : file === e));

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean);

/** Set when the runner is told to stop (Ctrl-C): no further phase starts. */
let stopped;

/** Runs one `node --test` over files; resolves with its exit code and the summary it wrote. */
function runPhase(files, concurrency, env) {
  return new Promise((resolve) => {
    if (!files.length) return resolve({ code: 0, summary: '' });
    const tmp = mkdtempSync(join(tmpdir(), 'escrow-test-'));
    const summary = join(tmp, 'summary.txt');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--test',
        `--test-concurrency=${concurrency}`,
        '--test-reporter=tap',
        '--test-reporter-destination=stdout',
        `--test-reporter=${join(ROOT, 'scripts/test-summary.mjs')}`,
        `--test-reporter-destination=${summary}`,
        ...files,
      ],
      { stdio: 'inherit', env },
    );
    const forward = (sig) => {
      stopped = sig;
      child.kill(sig);
    };
    process.on('SIGINT', forward).on('SIGTERM', forward);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward).off('SIGTERM', forward);
      const text = existsSync(summary) ? readFileSync(summary, 'utf8').trim() : '';
      rmSync(tmp, { recursive: true, force: true });
      resolve({ code: code ?? 1, signal, summary: text || `(no summary: node --test stopped early${signal ? ` on ${signal}` : ''})` });
    });
  });
}

async function main() {
  const args = process.argv.slice(2);
  const e2e = args.includes('--e2e');
  const named = args.filter((a) => a !== '--e2e');
  const all = testFiles('test');
  for (const f of named) if (!existsSync(f)) fail(`no such test file: ${f}`);
  for (const e of [...E2E, ...TIMED])
    if (!all.some((f) => matches([e], f))) fail(`scripts/test.mjs names ${e}, but no test file matches it`);
  const files = named.length ? named : all.filter((f) => matches(E2E, f) === e2e);
  const coverage = !named.length && !e2e;
  const parallel = Number(process.env.TEST_CONCURRENCY) || (e2e ? 1 : Math.max(2, availableParallelism()));
  // Phases: the independent files in parallel, then the self-timing ones alone.
  const phases = [
    [files.filter((f) => !TIMED.includes(f)), parallel],
    [files.filter((f) => TIMED.includes(f)), 1],
  ];

  const label = named.length
    ? `${files.length} named file(s)`
    : e2e
      ? 'the end-to-end group (npm run test:e2e)'
      : 'the fast group (npm test; the end-to-end files run with npm run test:e2e)';
  console.log(
    `# ${label}: ${files.length} files, ${parallel} at a time${phases[1][0].length ? ` (then ${phases[1][0].length} self-timing files alone)` : ''}${coverage ? ', with coverage' : ''}`,
  );
  if (files.some((f) => f.startsWith('test/console/')) && !CHROMIUM.some((p) => existsSync(p)) && !process.env.CI) {
    console.log('# NO CHROMIUM: the console browser tests are skipped; install it with: apt-get install -y chromium fonts-liberation');
  }

  // Coverage as c8 would collect it (V8 writes a file per process into NODE_V8_COVERAGE), reported
  // once over both phases with package.json's c8 settings, threshold included.
  const covDir = join(ROOT, 'coverage/tmp');
  if (coverage) {
    rmSync(covDir, { recursive: true, force: true });
    mkdirSync(covDir, { recursive: true });
  }
  const env = coverage ? { ...process.env, NODE_V8_COVERAGE: covDir } : process.env;
  const started = performance.now();
  const results = [];
  for (const [list, concurrency] of phases) if (!stopped) results.push(await runPhase(list, concurrency, env));
  let code = results.find((r) => r.code !== 0)?.code ?? 0;
  let coverageNote = '';
  if (coverage) {
    const c8 = spawnSync(process.execPath, [join(ROOT, 'node_modules/c8/bin/c8.js'), 'report', `--temp-directory=${covDir}`], {
      stdio: 'inherit',
    });
    if (c8.status !== 0) {
      coverageNote = "COVERAGE below package.json's threshold (c8's ERROR line above names it)";
      if (code === 0) code = c8.status ?? 1;
    }
  }
  const s = Math.round((performance.now() - started) / 1000);
  const texts = results
    .filter((r) => r.summary)
    .map((r, i) =>
      results.filter((x) => x.summary).length > 1 ? `${i === 0 ? 'parallel' : 'self-timing, alone'}: ${r.summary}` : r.summary,
    );
  const verdict = code === 0 ? 'PASS' : `FAIL (exit ${code})`;
  if (coverageNote) texts.push(coverageNote);
  console.log(`\n==== ${label}\n${texts.join('\n')}\n${verdict} in ${Math.floor(s / 60)} min ${s % 60} s`);
  process.exit(code);
}

function fail(msg) {
  console.error(`scripts/test.mjs: ${msg}`);
  process.exit(2);
}

await main();
