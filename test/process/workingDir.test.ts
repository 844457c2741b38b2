// With DATABASE_URL and no DATA_DIR, the service writes nothing to its working directory (README.md
// "Configuration", REQUEST_LOG): there is no data directory, so there is no request log file unless REQUEST_LOG names one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_URL } from '../harness.ts';
import { pgSchema } from '../reliability/lib.ts';
import { parseConfig } from '../../src/config.ts';
import { startService, TSX_ANYWHERE } from './proc.ts';

test('where the request log goes: DATA_DIR/requests.log, none with :memory: or with DATABASE_URL alone, REQUEST_LOG always wins', () => {
  const pg = 'postgres://db/escrow';
  assert.equal(parseConfig({}).requestLog, './.escrow-data/requests.log');
  assert.equal(parseConfig({ DATA_DIR: ':memory:' }).requestLog, undefined);
  assert.equal(parseConfig({ DATABASE_URL: pg }).requestLog, undefined);
  assert.equal(parseConfig({ DATABASE_URL: pg, DATA_DIR: '' }).requestLog, undefined, 'an empty DATA_DIR is unset');
  assert.equal(parseConfig({ DATABASE_URL: pg, DATA_DIR: '/var/lib/escrow/' }).requestLog, '/var/lib/escrow/requests.log');
  assert.equal(parseConfig({ DATABASE_URL: pg, REQUEST_LOG: '/var/log/escrow.log' }).requestLog, '/var/log/escrow.log');
});

test('a process on DATABASE_URL without DATA_DIR leaves its working directory empty', {
  timeout: 60_000,
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'escrow-cwd-'));
  const pg = await pgSchema('cwd');
  try {
    const s = await startService(TSX_ANYWHERE, { DATABASE_URL: pg.url }, 60_000, cwd);
    assert.match(s.stderr(), /"requestLog":null/);
    for (let i = 0; i < 5; i++)
      assert.equal((await fetch(`${s.url}/v1/agents`, { method: 'POST', body: `{"label":"a${i}"}` })).status, 201);
    assert.equal(await s.stop(), 0, s.stderr());
    assert.deepEqual(readdirSync(cwd), []);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
    await pg.drop();
  }
});
