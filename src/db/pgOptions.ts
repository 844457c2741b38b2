// postgres.js settings that change the per-statement work of the driver and the server, read from the
// environment so that each can be measured A/B with the same build (docs/statements.md §4).
//
//   PG_PREPARE=off  unnamed statements: Parse and Describe on every execution, no plan kept on the
//                   server (default on: a named prepared statement per connection and text, parsed
//                   once; the fused writes of src/db/fuse.ts have one text per command shape).
//
// Not offered: fetch_types=false. Its array-type lookup runs once per new connection, not per
// statement, and with postgres.js 3.4.9 a reserved connection (every transaction, src/db/pgTx.ts)
// then never became ready in a trial (the transaction waited out its reservation deadline).
import { ConfigError } from '../config.ts';

export interface PgDriverOptions {
  prepare: boolean;
}

export const PG_DRIVER_DEFAULTS: PgDriverOptions = { prepare: true };

function onOff(env: Record<string, string | undefined>, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(on|true|1)$/i.test(raw)) return true;
  if (/^(off|false|0)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be on or off, got ${JSON.stringify(raw)}`);
}

export function pgDriverOptions(env: Record<string, string | undefined>): PgDriverOptions {
  return { prepare: onOff(env, 'PG_PREPARE', PG_DRIVER_DEFAULTS.prepare) };
}
