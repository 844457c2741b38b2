// A fresh run of test/python/vectors.ts (a service in process, about 30 s) makes the same bundle cases
// with the same results as the committed python/tests/vectors/bundles.json: the Python package's
// vectors never go stale while the service changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { bundleVectors, type BundleVector } from './vectors.ts';

const outcome = (e: BundleVector['expected']) => ({ valid: e.valid, checks: e.checks });

test('a fresh run of the generator makes the same cases with the same results', async () => {
  const committed = JSON.parse(readFileSync(new URL('../../python/tests/vectors/bundles.json', import.meta.url), 'utf8')) as BundleVector[];
  const fresh = await bundleVectors();
  assert.deepEqual(
    fresh.map((v) => [v.name, outcome(v.expected)]),
    committed.map((v) => [v.name, outcome(v.expected)]),
    'regenerate with npx tsx test/python/vectors.ts',
  );
});
