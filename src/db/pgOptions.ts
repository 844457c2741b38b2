// postgres.js settings that change the per-statement work of the driver and the server, read from the
// environment so that each can be measured A/B with the same build (docs/performance.md §1.4).
//
//   PG_PREPARE=off      unnamed statements: Parse and Describe on every execution, no plan kept on
//                       the server (default on: a named prepared statement per connection and text,
//                       parsed once; the fused writes of src/db/fuse.ts have one text per command shape).
//   PG_FETCH_TYPES=off  skip the array-type lookup postgres.js runs once per new connection (default
//                       on). Every array this service binds is cast in its SQL ($1::text[] …).
import { ConfigError } from '../config.ts';

export interface PgDriverOptions {
  prepare: boolean;
  fetchTypes: boolean;
}

export const PG_DRIVER_DEFAULTS: PgDriverOptions = { prepare: true, fetchTypes: true };

function onOff(env: Record<string, string | undefined>, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(on|true|1)$/i.test(raw)) return true;
  if (/^(off|false|0)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be on or off, got ${JSON.stringify(raw)}`);
}

export function pgDriverOptions(env: Record<string, string | undefined>): PgDriverOptions {
  return { prepare: onOff(env, 'PG_PREPARE', PG_DRIVER_DEFAULTS.prepare), fetchTypes: onOff(env, 'PG_FETCH_TYPES', PG_DRIVER_DEFAULTS.fetchTypes) };
}
