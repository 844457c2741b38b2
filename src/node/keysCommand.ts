// The service's `keys` command (docs/keys.md): `keys generate --out DIR` writes a new issuer and
// webhook key as 0600 files; `keys export --out DIR` writes the private keys an earlier version kept
// in the database (named by DATABASE_URL or DATA_DIR) as 0600 files, so a start can then erase them
// there. It never writes over an existing file and never changes the database.
import { mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { publicKeyOf } from '@escrow-settlement/protocol/crypto/ed25519';
import { parseConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { formatNoteKey } from '../crypto/keyText.ts';
import type { Db } from '../db/types.ts';
import { writeNewSecretFile } from './keyFiles.ts';
import { lockDataDir } from './dataDirLock.ts';
import { openStore } from './openStore.ts';
import { hasPgliteDb } from './pgliteInit.ts';
import { generateKeyFiles, KEY_FILES } from './serviceKeys.ts';

type Env = Record<string, string | undefined>;

export const KEYS_USAGE = 'usage: keys generate --out DIR [--name LOG_ORIGIN] | keys export --out DIR';

/** Reads `--out DIR` and `--name N` (also as --out=DIR); anything else is refused. */
function options(args: readonly string[], allowed: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(args[i]);
    if (!m || !allowed.includes(m[1])) throw new ConfigError(args[i], `is not an option here (${KEYS_USAGE})`);
    const v = m[2] ?? args[++i];
    if (v === undefined || v === '') throw new ConfigError(`--${m[1]}`, 'needs a value');
    out[m[1]] = v;
  }
  if (!out.out) throw new ConfigError('--out', `is required (${KEYS_USAGE})`);
  return out;
}

/** DIR, created with mode 0700 when missing. */
function outDir(dir: string): string {
  const abs = resolve(dir);
  try {
    mkdirSync(abs, { recursive: true, mode: 0o700 });
    if (!statSync(abs).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new ConfigError('--out', `cannot use ${abs} as a directory (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return abs;
}

/** Runs `keys …`; returns the exit code. Lines go to `out` (stdout) and `err` (stderr). */
export async function keysCommand(args: readonly string[], env: Env, out: (s: string) => void, err: (s: string) => void): Promise<number> {
  try {
    const [sub, ...rest] = args;
    if (sub === 'generate') {
      const o = options(rest, ['out', 'name']);
      const name = o.name ?? env.LOG_ORIGIN ?? parseConfig(env).logOrigin;
      const files = generateKeyFiles(outDir(o.out), name);
      out(`wrote ${files.issuer} (issuer key, named ${name}) and ${files.webhook} (webhook key), mode 0600\n`);
      out(`start the service with ISSUER_KEY=file:${files.issuer} WEBHOOK_KEY=file:${files.webhook}\n`);
      return 0;
    }
    if (sub === 'export') {
      const o = options(rest, ['out']);
      return await exportKeys(env, outDir(o.out), out);
    }
    throw new ConfigError(
      'keys',
      `${sub === undefined ? 'needs a subcommand' : `has no subcommand ${JSON.stringify(sub)}`} (${KEYS_USAGE})`,
    );
  } catch (e) {
    err(`escrow-settlement keys: ${e instanceof ConfigError ? e.message : String((e as Error)?.message ?? e)}\n`);
    return 1;
  }
}

type Stored = { key_id: string; purpose: string; public_key: string; secret_key: string; active: boolean };

/** Writes every private key the database still holds; the database is only read. */
async function exportKeys(env: Env, dir: string, out: (s: string) => void): Promise<number> {
  const config = parseConfig(env);
  if (!config.databaseUrl && (config.dataDir === ':memory:' || !hasPgliteDb(config.dataDir)))
    throw new ConfigError('DATA_DIR', `names no database to export from (${config.dataDir}); set DATABASE_URL or DATA_DIR`);
  // PGlite: one process per directory (docs/design.md §7): stop the service first.
  const lock = config.databaseUrl ? undefined : lockDataDir(config.dataDir);
  let db: Db | undefined;
  try {
    db = await openStore(config);
    const hasColumn = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'service_keys' AND column_name = 'secret_key'`,
    );
    const rows =
      hasColumn[0].n === 0
        ? []
        : await db.query<Stored>(
            `SELECT key_id, purpose, public_key, secret_key, valid_until IS NULL AS active FROM service_keys
              WHERE secret_key IS NOT NULL AND purpose IN ('issuer', 'webhook') ORDER BY seq`,
          );
    if (rows.length === 0) {
      out('this database holds no private key: nothing to export (its keys are named by ISSUER_KEY and WEBHOOK_KEY)\n');
      return 0;
    }
    const written: string[] = [];
    for (const r of rows) {
      const seed = fromHex(r.secret_key, 'secret_key');
      if (toHex(publicKeyOf(seed)) !== r.public_key) throw new Error(`key ${r.key_id}: the stored secret does not match its public key`);
      const file = r.active ? KEY_FILES[r.purpose as 'issuer' | 'webhook'] : `${r.purpose}-${r.key_id}.key`;
      const name = r.purpose === 'issuer' ? config.logOrigin : 'escrow-settlement-webhook';
      const path = join(dir, file);
      try {
        writeNewSecretFile(path, formatNoteKey(name, seed));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new ConfigError(
          '--out',
          code === 'EEXIST' ? `${path} exists: a key is never overwritten` : `cannot write ${path} (${code ?? e})`,
        );
      }
      written.push(path);
      out(`wrote ${path} (${r.purpose} key ${r.key_id}${r.active ? '' : ', retired'}), mode 0600\n`);
    }
    out(
      `start with ISSUER_KEY=file:${join(dir, KEY_FILES.issuer)} WEBHOOK_KEY=file:${join(dir, KEY_FILES.webhook)}; that start erases the keys from the database\n`,
    );
    return 0;
  } finally {
    await db?.close();
    lock?.release();
  }
}
