// The Db interface over postgres.js, for DATABASE_URL deployments.
import postgres from 'postgres';
import type { Db, Queryable, Row, Stmt, Tx, TxOptions } from './types.ts';
import { groupCommit } from './groupCommit.ts';
import { isDatabaseUnavailable } from './errors.ts';
import { pipelinedTx } from './pgTx.ts';
import { PG_DRIVER_DEFAULTS, type PgDriverOptions } from './pgOptions.ts';

function wrap(sql: postgres.Sql, prepare: boolean): Queryable {
  const q = <T extends Row>(text: string, params: unknown[] = []) =>
    sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare }) as unknown as Promise<T[]>;
  return {
    query: q,
    // Autocommit statements, each on whichever pool connection is free (transactions, where a
    // batch is pipelined on one connection, are src/db/pgTx.ts).
    batch: (stmts: Stmt[]) => Promise.all(stmts.map((s) => q(s.text, s.params))),
  };
}

/**
 * How often at most the pool is replaced after a lost connection. postgres.js 3.4.9 can leave a
 * connection whose socket died unable to flush small writes ever again (its deferred-write timer is
 * cleared but not reset: porsager/postgres#1154, #1208), so after an outage its queries would hang.
 * A fresh pool has fresh connections: the old one is ended and every later query uses the new one.
 */
const RENEW_EVERY_MS = 1_000;

/**
 * An autocommit statement (outside a transaction) with no answer within this is given up as a lost
 * connection: the caller gets 503 `unavailable` and the pool is renewed. Without it, a query queued
 * on a connection that died silently during an outage (the postgres.js bug above) waited forever
 * (seen once in 15,340 requests of the three-outages reliability test). Generous: one statement of
 * this service takes milliseconds. Transactions are left alone: abandoning one mid-way is the pool's job.
 */
const QUERY_DEADLINE_MS = 10_000;

/**
 * A transaction's bounds (pgTx.ts): a connection within the autocommit deadline; each statement
 * within 30 s, long enough for any lock wait this service has (a second instance waiting for the
 * first's migrations under their advisory lock), and still an end to a statement nobody answers.
 */
const TX_DEADLINES = { reserveMs: QUERY_DEADLINE_MS, statementMs: 30_000 };

function deadline<T>(p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`no answer from Postgres within ${QUERY_DEADLINE_MS / 1000} s`), { code: 'QUERY_DEADLINE' })),
      QUERY_DEADLINE_MS,
    );
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * libpq's two spellings of a Unix-domain socket, which postgres.js 3.4.9 does not read from a URL:
 * `postgres://user@/db?host=/var/run/postgresql` (it would forward `host` to the server as a setting,
 * which Postgres refuses) and `postgres://user@%2Fvar%2Frun%2Fpostgresql/db` (it would look the
 * directory up in DNS). Either becomes postgres.js's `host` option (a directory, with the port making
 * the socket's name `.s.PGSQL.<port>`) and a URL it can parse. Any other URL is returned unchanged.
 */
export function socketUrl(url: string): { url: string; host?: string } {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/s.exec(url);
  if (!m) return { url };
  const [, scheme, authority, rest] = m;
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostport = at >= 0 ? authority.slice(at + 1) : authority;
  let dir: string | undefined;
  let port = '';
  let tail = rest;
  const q = rest.indexOf('?');
  if (q >= 0) {
    const params = new URLSearchParams(rest.slice(q + 1));
    const h = params.get('host');
    if (h?.startsWith('/')) {
      dir = h;
      params.delete('host');
      const left = params.toString();
      tail = rest.slice(0, q) + (left ? `?${left}` : '');
    }
  }
  if (dir === undefined) {
    const hp = /^(%2F[^:]*)(?::(\d+))?$/i.exec(hostport);
    if (!hp) return { url };
    dir = decodeURIComponent(hp[1]);
    port = hp[2] ? `:${hp[2]}` : '';
  } else {
    const pm = /:(\d+)$/.exec(hostport);
    if (pm) port = `:${pm[1]}`;
  }
  return { url: `${scheme}${userinfo}localhost${port}${tail}`, host: dir };
}

export interface PostgresOptions {
  max?: number;
  schema?: string;
  applicationName?: string;
  /** Driver settings to measure (src/db/pgOptions.ts); the defaults otherwise. */
  driver?: PgDriverOptions;
  /** Called with the text of every statement written to the server, BEGIN and COMMIT included (tests and the bench count them). */
  onStatement?: (text: string) => void;
}

export function openPostgres(rawUrl: string, opts: PostgresOptions = {}): Db {
  const { url, host } = socketUrl(rawUrl);
  const driver = opts.driver ?? PG_DRIVER_DEFAULTS;
  const onStatement = opts.onStatement;
  const make = () =>
    postgres(url, {
      ...(host ? { host } : {}),
      // Only a primary, whatever the URL says (docs/operations.md §1). postgres.js 3.4.9 judges
      // `read-write` by default_transaction_read_only alone, which a hot standby leaves off (it is
      // read-only through in_hot_standby), so a connection that landed on a standby during a
      // failover was used and every write on it failed with 25006. Under `primary` postgres.js reads
      // in_hot_standby from the start-up answer (Postgres 14+; before, it asks pg_is_in_recovery())
      // and closes such a connection before any statement of ours, then tries the next host.
      target_session_attrs: 'primary',
      ...(onStatement ? { debug: (_conn: number, text: string) => onStatement(text) } : {}),
      max: opts.max ?? 10,
      onnotice: () => {},
      // Any connection closing (lost, or ended with its pool): the next one may reach another server.
      onclose: () => {
        epoch++;
      },
      // Types are read the same way as PGlite reads them: int8 and numeric are cast in SQL where
      // needed, timestamps come back as Date.
      connection: {
        application_name: opts.applicationName ?? 'escrow-settlement',
        ...(opts.schema ? { search_path: opts.schema } : {}),
        ...(driver.planCache === 'generic' ? { plan_cache_mode: 'force_generic_plan' } : {}),
      },
    });
  let epoch = 0;
  let sql = make();
  let renewedAt = 0;
  let closing = false;
  const renewOnOutage = (err: unknown): never => {
    if (!closing && isDatabaseUnavailable(err) && Date.now() - renewedAt >= RENEW_EVERY_MS) {
      renewedAt = Date.now();
      const old = sql;
      sql = make();
      void old.end({ timeout: 5 }).catch(() => {});
    }
    throw err;
  };
  const ownTx = <T>(fn: (tx: Tx) => Promise<T>) => pipelinedTx(() => sql.reserve(), fn, TX_DEADLINES, driver.prepare).catch(renewOnOutage);
  const group = driver.groupCommit ? groupCommit(ownTx) : undefined;
  return {
    kind: 'postgres',
    query: <T extends Row>(text: string, params?: unknown[]) =>
      deadline(wrap(sql, driver.prepare).query<T>(text, params)).catch(renewOnOutage),
    batch: (stmts: Stmt[]) => deadline(wrap(sql, driver.prepare).batch(stmts)).catch(renewOnOutage),
    // BEGIN and COMMIT ride with the transaction's first and last statements (pgTx.ts); with
    // GROUP_COMMIT, transactions naming their keys may share them (groupCommit.ts).
    tx: <T>(fn: (tx: Tx) => Promise<T>, txOpts?: TxOptions) => (group && txOpts?.group ? group.run(txOpts.group, fn) : ownTx(fn)),
    exec: async (text: string) => {
      await sql.unsafe(text).catch(renewOnOutage);
    },
    connectionEpoch: () => epoch,
    close: () => {
      closing = true;
      return sql.end({ timeout: 5 });
    },
  };
}
