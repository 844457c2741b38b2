// Applies the numbered migrations once, under an advisory lock, so instances starting together are safe.
import type { Db } from './types.ts';
import * as m001 from './migrations/001_init.sql.ts';
import * as m002 from './migrations/002_chain.sql.ts';
import * as m003 from './migrations/003_log_pending.sql.ts';
import * as m004 from './migrations/004_hardening.sql.ts';
import * as m005 from './migrations/005_webhooks.sql.ts';
import * as m006 from './migrations/006_lists.sql.ts';
import * as m007 from './migrations/007_party_signatures.sql.ts';
import * as m008 from './migrations/008_webhook_attempts.sql.ts';
import * as m009 from './migrations/009_webhook_tenancy.sql.ts';
import * as m010 from './migrations/010_witness.sql.ts';
import * as m011 from './migrations/011_x402_facilitator.sql.ts';
import * as m012 from './migrations/012_webhook_fairness.sql.ts';
import * as m013 from './migrations/013_escrow_lock.sql.ts';
import * as m014 from './migrations/014_keys_outside.sql.ts';
import * as m015 from './migrations/015_ap2.sql.ts';
import * as m016 from './migrations/016_ap2_transaction_scope.sql.ts';
import * as m017 from './migrations/017_money.sql.ts';
import * as m018 from './migrations/018_webhook_disable.sql.ts';

/** Each module exports its SQL (the schema's source of truth) and its name, which schema_migrations records. */
const MODULES = [m001, m002, m003, m004, m005, m006, m007, m008, m009, m010, m011, m012, m013, m014, m015, m016, m017, m018];

/** Forward-only, in order; a migration's version is the number its name starts with. */
export const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = MODULES.map(({ name, default: sql }) => ({
  version: Number(name.slice(0, 3)),
  name,
  sql,
}));

// Advisory lock key for migrations ('escrow-migrate' as a stable 32-bit number).
const MIGRATE_LOCK = 0x65736d31;

export async function migrate(db: Db): Promise<number[]> {
  return db.tx(async (tx) => {
    // Transaction-scoped advisory lock: a second instance starting at the same moment waits
    // here until the first has committed, then finds every migration applied.
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => Number(r.version)));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      for (const stmt of splitStatements(m.sql)) await tx.query(stmt);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}

/** Splits migration text on semicolons at line ends, outside quotes; comments dropped. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inQuote = false;
  for (const line of sql.split('\n')) {
    const trimmed = line.trim();
    if (!inQuote && (trimmed === '' || trimmed.startsWith('--'))) continue;
    cur += line + '\n';
    for (const ch of line) if (ch === "'") inQuote = !inQuote;
    if (!inQuote && trimmed.endsWith(';')) {
      out.push(cur.trim().replace(/;$/, ''));
      cur = '';
    }
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}
