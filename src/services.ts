// The dependency bag every route and command receives: built once per app, never a module singleton.
import type { Config } from './config.ts';
import type { Db } from './db/types.ts';
import type { CustodyAdapter } from './domain/custody.ts';

export interface Services {
  db: Db;
  config: Config;
  custody: CustodyAdapter;
  version: string;
  startedAt: number;
  /** Wall clock for uptime only; business time comes from the database (svc_now()). */
  nowMs: () => number;
}

export const VERSION = '0.3.0';
