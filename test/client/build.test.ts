// The client's build re-emits dist/ with tsc, which writes files without the run bit; the build then
// marks the `escrow-settlement` command (dist/bin.js) executable, or a linked or installed bin fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('after npm run build:client, packages/client/dist/bin.js is executable (mode 0755)', { skip: process.platform === 'win32' }, () => {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['run', 'build:client'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, r.stderr);
  const mode = statSync(`${ROOT}packages/client/dist/bin.js`).mode & 0o777;
  assert.equal(mode.toString(8), '755');
});
