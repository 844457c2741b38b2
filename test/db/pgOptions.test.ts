// The postgres.js and session settings read from the environment (src/db/pgOptions.ts): their
// defaults, their refusals, and that a session really plans as PG_PLAN_CACHE says.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PG_URL } from '../harness.ts';
import { ConfigError } from '../../src/errors.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { PG_DRIVER_DEFAULTS, pgDriverOptions } from '../../src/db/pgOptions.ts';

test('PG_PREPARE, PG_PLAN_CACHE and GROUP_COMMIT: defaults, both spellings, and a clear refusal naming the variable', () => {
  assert.deepEqual(pgDriverOptions({}), { prepare: true, planCache: 'generic', groupCommit: true });
  assert.deepEqual(pgDriverOptions({ PG_PREPARE: '', PG_PLAN_CACHE: '', GROUP_COMMIT: '' }), PG_DRIVER_DEFAULTS);
  assert.deepEqual(pgDriverOptions({ PG_PREPARE: 'off', PG_PLAN_CACHE: 'auto', GROUP_COMMIT: 'on' }), {
    prepare: false,
    planCache: 'auto',
    groupCommit: true,
  });
  assert.equal(pgDriverOptions({ GROUP_COMMIT: 'off' }).groupCommit, false);
  assert.throws(
    () => pgDriverOptions({ GROUP_COMMIT: 'yes' }),
    (e: unknown) => e instanceof ConfigError && /GROUP_COMMIT/.test(e.message),
  );
  assert.throws(
    () => pgDriverOptions({ PG_PLAN_CACHE: 'custom' }),
    (e: unknown) => e instanceof ConfigError && /PG_PLAN_CACHE/.test(e.message),
  );
  assert.throws(
    () => pgDriverOptions({ PG_PREPARE: 'maybe' }),
    (e: unknown) => e instanceof ConfigError && /PG_PREPARE/.test(e.message),
  );
});

test('a session plans generically by default, and as Postgres chooses with PG_PLAN_CACHE=auto', {
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  for (const [env, want] of [
    [{}, 'force_generic_plan'],
    [{ PG_PLAN_CACHE: 'auto' }, 'auto'],
  ] as const) {
    const db = openPostgres(PG_URL!, { max: 1, driver: pgDriverOptions(env) });
    try {
      const [row] = await db.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode');
      assert.equal(row.plan_cache_mode, want);
    } finally {
      await db.close();
    }
  }
});
