// Smoke test of `npm run bench` (bench/run.ts): the quick run on PGlite completes, prints its one table
// and writes the JSON with a row for every run and PASS/MISS for every target. Numbers are not judged
// here (a loaded test machine is no benchmark); only that every run measured something.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('npm run bench: BENCH_QUICK on PGlite prints one table and writes every run with PASS/MISS per target', {
  timeout: 240_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  const out = join(dir, 'results.json');
  try {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      BENCH_QUICK: '1',
      BENCH_OUT: out,
      // Coverage of the service children, when the suite runs under c8.
      ...(process.env.NODE_V8_COVERAGE ? { NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE } : {}),
    };
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts'], { cwd: ROOT, env });
      let so = '';
      let se = '';
      child.stdout.on('data', (d) => (so += d));
      child.stderr.on('data', (d) => (se += d));
      child.on('exit', (c) => resolve({ code: c, stdout: so, stderr: se }));
    });
    assert.equal(code, 0, `bench failed:\n${stderr.slice(-4000)}`);
    assert.match(stdout, /PGlite \(fallback/, 'the store is labelled');
    assert.match(stdout, /GROUP_COMMIT on.*, HTTP_BODY stream/, 'the modes are named');
    const tables = stdout.split('\n').filter((l) => /^\| Run\s+\| Measure/.test(l));
    assert.equal(tables.length, 1, 'exactly one table');

    const result = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(result.meta.store, 'pglite');
    assert.equal(result.meta.quick, true);
    assert.equal(result.meta.groupCommit, true);
    assert.equal(result.meta.httpBody, 'stream');
    const runs = new Set(result.table.map((r: { run: string }) => r.run));
    for (const run of ['1 lifecycle', '2 verify', '3 log', '4 sweep', '5 webhooks', '6 memory'])
      assert.ok(runs.has(run), `a row for ${run}`);
    const targets = result.targets as Array<{ target: string; result: string }>;
    for (const t of [
      '≥ 80% of floor',
      'p99 < 50 ms',
      'within 3x',
      'closings/s ≥ 80% of floor',
      'exactly once: proofs == escrows',
      '< 300 MB',
    ]) {
      assert.ok(
        targets.some((x) => x.target === t),
        `a target row for ${t}`,
      );
    }
    for (const t of targets) assert.match(t.result, /^(PASS|MISS)$/);
    // Exactly once is a correctness property, not a speed: it must hold even on a slow machine.
    assert.equal(targets.find((x) => x.target.startsWith('exactly once'))!.result, 'PASS');
    assert.equal(result.raw.sweep.twoInstances.exactlyOnce, true);
    assert.ok(
      result.raw.lifecycle.every((r: any) => r.service.lifecycles > 0 && r.floor.lifecycles > 0),
      'both sides ran lifecycles',
    );
    assert.equal(result.raw.webhooks.delivered, result.raw.webhooks.produced, 'every webhook event arrived');
    // The service's c=16 rate against the machine's raw write rate: the one number comparable across machines.
    const rawRow = result.table.find((r: { measure: string }) => r.measure.startsWith('raw INSERT+UPDATE'));
    assert.match(rawRow?.ratio ?? '', /^\d+(\.\d)?%$/, 'the raw INSERT+UPDATE row carries the c=16 ratio');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
