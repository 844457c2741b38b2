// The Db interface over postgres.js, for DATABASE_URL deployments.
import postgres from 'postgres';
import type { Db, Row, Stmt, Tx, TxOptions } from './types.ts';
import { groupCommit } from './groupCommit.ts';
import { isDatabaseUnavailable } from './errors.ts';
import { pipelinedTx } from './pgTx.ts';
import { PG_DRIVER_DEFAULTS, type PgDriverOptions } from './pgOptions.ts';

/**
 * How often at most the pool is replaced after a lost connection. postgres.js 3.4.9 can leave a
 * connection whose socket died unable to flush small writes ever again (its deferred-write timer is
 * cleared but not reset: porsager/postgres#1154, #1208), so after an outage its queries would hang.
 * A fresh pool has fresh connections: the old one is ended, every later query uses the new one,
 * and what still waited in the old one for a connection moves to the new one (reserve and
 * autocommit below). Remove with porsager/postgres#1154's fix.
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

interface Pool {
  sql: postgres.Sql;
  /** `{value}` once `work` settles, or undefined if this pool is replaced first. */
  unlessReplaced<T>(work: Promise<T>): Promise<{ value: T } | undefined>;
  /** Called once when the pool is replaced (or closed): everything waiting in unlessReplaced moves on. */
  replaced(): void;
}

function pooled(sql: postgres.Sql): Pool {
  // A set of waiters rather than one promise to race: a pool lives for millions of statements,
  // and each race would leave a reaction on that promise until the pool is replaced.
  const waiting = new Set<() => void>();
  let gone = false;
  return {
    sql,
    unlessReplaced: <T>(work: Promise<T>) =>
      new Promise<{ value: T } | undefined>((resolve, reject) => {
        if (gone) return resolve(undefined);
        const moveOn = () => resolve(undefined);
        waiting.add(moveOn);
        work.then(
          (value) => {
            waiting.delete(moveOn);
            resolve({ value });
          },
          (err) => {
            waiting.delete(moveOn);
            reject(err);
          },
        );
      }),
    replaced: () => {
      gone = true;
      for (const w of waiting) w();
      waiting.clear();
    },
  };
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
  let pool = pooled(make());
  let renewedAt = 0;
  let closing = false;
  const renewOnOutage = (err: unknown): never => {
    if (!closing && isDatabaseUnavailable(err) && Date.now() - renewedAt >= RENEW_EVERY_MS) {
      renewedAt = Date.now();
      const old = pool;
      pool = pooled(make());
      old.replaced();
      void old.sql.end({ timeout: 5 }).catch(() => {});
    }
    throw err;
  };

  /**
   * A connection of the current pool. One asked of a pool that is replaced while it waits is asked
   * of the new pool: postgres.js 3.4.9 ends a pool without answering the reservations queued in it
   * (they waited out their deadline, with Postgres up), and whatever the old pool hands out later
   * goes straight back to it. Remove with the renewal above.
   */
  const reserve = async (): Promise<postgres.ReservedSql<Record<string, never>>> => {
    for (;;) {
      const p = pool;
      const asked = p.sql.reserve();
      const got = await p.unlessReplaced(asked);
      if (got && p === pool) return got.value;
      if (got) got.value.release();
      else
        asked.then(
          (late) => late.release(),
          () => {},
        );
      if (closing) throw Object.assign(new Error('the database pool was closed'), { code: 'CONNECTION_ENDED' });
    }
  };

  /**
   * An autocommit statement on the current pool. One still queued in a pool that is replaced (never
   * written: postgres.js has not given it a connection) is cancelled there and sent on the new
   * pool, for the reason above; one already written waits for its answer where it is.
   */
  const autocommit = async <T extends Row>(text: string, params: unknown[] = []): Promise<T[]> => {
    for (;;) {
      const p = pool;
      const q = p.sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: driver.prepare });
      const got = await p.unlessReplaced(q);
      if (got) return got.value as unknown as T[];
      if ((q as unknown as { state: unknown }).state !== null || closing) return (await q) as unknown as T[];
      q.catch(() => {});
      void q.cancel();
    }
  };

  const ownTx = <T>(fn: (tx: Tx) => Promise<T>) => pipelinedTx(reserve, fn, TX_DEADLINES, driver.prepare).catch(renewOnOutage);
  const group = driver.groupCommit ? groupCommit(ownTx) : undefined;
  return {
    kind: 'postgres',
    query: <T extends Row>(text: string, params?: unknown[]) => deadline(autocommit<T>(text, params)).catch(renewOnOutage),
    // Autocommit statements, each on whichever pool connection is free (transactions, where a
    // batch is pipelined on one connection, are src/db/pgTx.ts).
    batch: (stmts: Stmt[]) => deadline(Promise.all(stmts.map((st) => autocommit(st.text, st.params)))).catch(renewOnOutage),
    // BEGIN and COMMIT ride with the transaction's first and last statements (pgTx.ts); with
    // GROUP_COMMIT, transactions naming their keys may share them (groupCommit.ts).
    tx: <T>(fn: (tx: Tx) => Promise<T>, txOpts?: TxOptions) => (group && txOpts?.group ? group.run(txOpts.group, fn) : ownTx(fn)),
    exec: async (text: string) => {
      await pool.sql.unsafe(text).catch(renewOnOutage);
    },
    connectionEpoch: () => epoch,
    close: () => {
      closing = true;
      pool.replaced();
      return pool.sql.end({ timeout: 5 });
    },
  };
}
