// The PGlite process's WebAssembly tiering choice (src/node/wasmTiering.ts): Liftoff only, unless
// the operator's own node flags (command line or NODE_OPTIONS) already choose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { liftoffOnlyWanted } from '../../src/node/wasmTiering.ts';

test('no tiering flag of the operator: Liftoff only', () => {
  assert.equal(liftoffOnlyWanted([], undefined), true);
  assert.equal(liftoffOnlyWanted(['--import', 'tsx', '--max-old-space-size=512'], '--enable-source-maps'), true);
  // Flags that only look alike are not tiering flags.
  assert.equal(liftoffOnlyWanted(['--liftoffx', '--no-wasm-tiering-budgetary'], ''), true);
});

test('a tiering flag on the command line or in NODE_OPTIONS is kept, in either spelling', () => {
  for (const argv of [
    ['--no-liftoff-only'],
    ['--liftoff-only'],
    ['--wasm-tier-up'],
    ['--no-wasm-dynamic-tiering'],
    ['--wasm-tiering-budget=99'],
    ['--no_liftoff_only'],
    ['--no-liftoff'],
  ]) {
    assert.equal(liftoffOnlyWanted(argv, undefined), false, argv.join(' '));
  }
  assert.equal(liftoffOnlyWanted([], '--max-old-space-size=512  --no-liftoff-only'), false);
});
