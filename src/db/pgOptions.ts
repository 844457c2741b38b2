// postgres.js settings that change the per-statement work of the driver and the server, read from the
// environment so that each can be measured A/B with the same build (docs/statements.md §4).
//
//   PG_PREPARE=off  unnamed statements: Parse and Describe on every execution, no plan kept on the
//                   server (default on: a named prepared statement per connection and text, parsed
//                   once; the fused writes of src/db/fuse.ts have one text per command shape).
//   PG_PLAN_CACHE=auto  Postgres chooses between a custom and the generic plan of each prepared
//                   statement (its default). Default here: generic, the session's plan_cache_mode
//                   set to force_generic_plan. One fused write was planned anew on every execution
//                   under auto (pg_prepared_statements: 40 custom plans of 40); generic plans gave
//                   5-16% more lifecycles/s at c=16 in three alternating pairs (docs/performance.md §4.4).
//   GROUP_COMMIT=off each command in a transaction of its own (default on: commands that arrive
//                   together share one transaction, so one COMMIT and one WAL flush serve many of
//                   them, src/db/groupCommit.ts; 1.07x lifecycles/s at c=16 and 1.46x at c=64 in
//                   three alternating pairs, docs/performance.md §4.6).
//
// Not offered: fetch_types=false. Its array-type lookup runs once per new connection, not per
// statement, and with postgres.js 3.4.9 a reserved connection (every transaction, src/db/pgTx.ts)
// then never became ready in a trial (the transaction waited out its reservation deadline).
import { ConfigError } from '../errors.ts';

export interface PgDriverOptions {
  prepare: boolean;
  /** The session's plan_cache_mode: force_generic_plan, or Postgres's own choice ('auto'). */
  planCache: 'generic' | 'auto';
  /** Commands that arrive together share one transaction (src/db/groupCommit.ts). */
  groupCommit: boolean;
}

export const PG_DRIVER_DEFAULTS: PgDriverOptions = { prepare: true, planCache: 'generic', groupCommit: true };

function onOff(env: Record<string, string | undefined>, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(on|true|1)$/i.test(raw)) return true;
  if (/^(off|false|0)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be on or off, got ${JSON.stringify(raw)}`);
}

function planCache(env: Record<string, string | undefined>): PgDriverOptions['planCache'] {
  const raw = env.PG_PLAN_CACHE;
  if (raw === undefined || raw === '') return PG_DRIVER_DEFAULTS.planCache;
  if (raw === 'generic' || raw === 'auto') return raw;
  throw new ConfigError('PG_PLAN_CACHE', `must be generic or auto, got ${JSON.stringify(raw)}`);
}

export function pgDriverOptions(env: Record<string, string | undefined>): PgDriverOptions {
  return {
    prepare: onOff(env, 'PG_PREPARE', PG_DRIVER_DEFAULTS.prepare),
    planCache: planCache(env),
    groupCommit: onOff(env, 'GROUP_COMMIT', PG_DRIVER_DEFAULTS.groupCommit),
  };
}
