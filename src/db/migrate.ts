// Applies the numbered migrations once, under an advisory lock, so instances starting together are safe.
import type { Db } from './types.ts';
import m001 from './migrations/001_init.sql.ts';
import m002 from './migrations/002_chain.sql.ts';
import m003 from './migrations/003_log_pending.sql.ts';
import m004 from './migrations/004_hardening.sql.ts';
import m005 from './migrations/005_webhooks.sql.ts';
import m006 from './migrations/006_lists.sql.ts';
import m007 from './migrations/007_party_signatures.sql.ts';
import m008 from './migrations/008_webhook_attempts.sql.ts';
import m009 from './migrations/009_webhook_tenancy.sql.ts';
import m010 from './migrations/010_witness.sql.ts';
import m011 from './migrations/011_x402_facilitator.sql.ts';
import m012 from './migrations/012_webhook_fairness.sql.ts';
import m013 from './migrations/013_escrow_lock.sql.ts';

/** Forward-only, in order. The SQL strings are the schema's source of truth. */
export const MIGRATIONS: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  { version: 1, name: '001_init', sql: m001 },
  { version: 2, name: '002_chain', sql: m002 },
  { version: 3, name: '003_log_pending', sql: m003 },
  { version: 4, name: '004_hardening', sql: m004 },
  { version: 5, name: '005_webhooks', sql: m005 },
  { version: 6, name: '006_lists', sql: m006 },
  { version: 7, name: '007_party_signatures', sql: m007 },
  { version: 8, name: '008_webhook_attempts', sql: m008 },
  { version: 9, name: '009_webhook_tenancy', sql: m009 },
  { version: 10, name: '010_witness', sql: m010 },
  { version: 11, name: '011_x402_facilitator', sql: m011 },
  { version: 12, name: '012_webhook_fairness', sql: m012 },
  { version: 13, name: '013_escrow_lock', sql: m013 },
];

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
