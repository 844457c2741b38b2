// Opening the store at start-up, with every failure turned into a ConfigError that names the
// variable to fix (docs/design.md §6): DATABASE_URL unreachable, refused or wrong; DATA_DIR unusable.
import type { Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { pgDriverOptions } from '../db/pgOptions.ts';
import { openPostgres, socketUrl } from '../db/postgres.ts';
import { openPglite } from '../db/pglite.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import type { Db } from '../db/types.ts';

/** How long start-up waits for Postgres to answer before naming DATABASE_URL (the whole start must fail within 10 s). */
export const CONNECT_DEADLINE_MS = 5_000;

/** host:port/database of a postgres URL, never its user or password. */
export function describeDatabaseUrl(url: string): string {
  try {
    // A libpq multi-host list (docs/operations.md §1) is no URL host: name every host as written.
    const multi = /^postgres(?:ql)?:\/\/(?:[^@/?#]*@)?([^/?#]*,[^/?#]*)(\/[^?#]*)?/.exec(url);
    if (multi) return `${multi[1]}${multi[2] && multi[2].length > 1 ? multi[2] : ''}`;
    const socket = socketUrl(url);
    const u = new URL(socket.url);
    if (socket.host)
      return `the socket ${socket.host}/.s.PGSQL.${u.port || '5432'}${u.pathname.length > 1 ? ` (database ${u.pathname.slice(1)})` : ''}`;
    return `${u.hostname || 'localhost'}:${u.port || '5432'}${u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return 'the configured server';
  }
}

const CONNECT_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOENT: 'no such socket',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'timed out',
  CONNECT_TIMEOUT: 'timed out',
};

/** Why a first query against DATABASE_URL failed, in one line without secrets. */
function databaseFailure(err: unknown, target: string): ConfigError {
  const e = err as { code?: string; message?: string; errors?: Array<{ code?: string }> };
  const code = e?.code ?? e?.errors?.[0]?.code;
  if (isDatabaseUnavailable(err)) {
    return new ConfigError(
      'DATABASE_URL',
      `cannot reach Postgres at ${target} (${(code && CONNECT_WORDS[code]) ?? code ?? 'connection failed'})`,
    );
  }
  // The server answered and said no: wrong password (28P01), no such role (28000), no such database
  // (3D000). Postgres's own message names the role or database, never the password.
  const msg = typeof e?.message === 'string' ? e.message.split('\n')[0] : String(err);
  return new ConfigError('DATABASE_URL', `Postgres at ${target} refused the connection (${code ? `${code}: ` : ''}${msg})`);
}

async function openPostgresChecked(url: string): Promise<Db> {
  const db = openPostgres(url, { driver: pgDriverOptions(process.env) });
  const target = describeDatabaseUrl(url);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ConfigError('DATABASE_URL', `no answer from Postgres at ${target} within ${CONNECT_DEADLINE_MS / 1000} s`)),
      CONNECT_DEADLINE_MS,
    );
  });
  try {
    await Promise.race([db.query('SELECT 1'), deadline]);
    return db;
  } catch (err) {
    void db.close().catch(() => {});
    throw err instanceof ConfigError ? err : databaseFailure(err, target);
  } finally {
    clearTimeout(timer);
  }
}

/** PGlite throws non-Error values on some failures ("[object Object]"): say what it said. */
function pgliteWords(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/**
 * The store the configuration names: Postgres (checked with one query under a deadline), or PGlite
 * in DATA_DIR (the caller has already locked and checked the directory).
 */
export async function openStore(config: Config): Promise<Db> {
  if (config.databaseUrl) return openPostgresChecked(config.databaseUrl);
  try {
    return await openPglite(config.dataDir);
  } catch (err) {
    throw new ConfigError('DATA_DIR', `cannot open the embedded database in ${config.dataDir} (${pgliteWords(err)})`);
  }
}
