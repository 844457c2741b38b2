// Which database failures mean "the database cannot be reached right now" (an outage the client may
// retry) rather than a fault in the service: the error boundary answers them 503 `unavailable`
// with Retry-After instead of 500 `internal` (docs/design.md §2.3). Web APIs only.

/** How long a client should wait before retrying during an outage (seconds, the Retry-After value). */
export const OUTAGE_RETRY_AFTER_S = 5;

/**
 * Codes a lost connection carries: the socket's (Node's net errors as postgres.js passes them on)
 * and postgres.js's own (CONNECTION_CLOSED when the server or network drops a connection in use,
 * CONNECTION_ENDED/DESTROYED when the pool was closed, CONNECT_TIMEOUT when the server never answers).
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // Ours (src/db/postgres.ts): an autocommit statement with no answer within its deadline.
  'QUERY_DEADLINE',
]);

/**
 * SQLSTATEs the server sends when it cannot serve anyone for now: class 08 (connection exception),
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting or in recovery),
 * 53300 too_many_connections, and 25006 read_only_sql_transaction: the server is (or has just become)
 * a standby, so writes wait for a primary (docs/operations.md §1); and 57014 query_canceled: the
 * server's statement_timeout or an operator's pg_cancel_backend stopped the statement. The service's
 * own statements never ask for a read-only transaction and it never cancels one, so neither is a
 * client's mistake. A client's bad value or a constraint never lands here.
 */
const UNAVAILABLE_STATE = /^(08...|57P0[123]|57014|53300|25006)$/;

/** True when `err` (from postgres.js, PGlite or the socket below them) says the database is unreachable. */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 3) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || UNAVAILABLE_STATE.test(code))) return true;
  // A Unix-socket DATABASE_URL: a stopped server removes its socket file (ENOENT on connect).
  if (code === 'ENOENT' && (err as { syscall?: unknown }).syscall === 'connect') return true;
  // Happy Eyeballs (localhost → ::1 and 127.0.0.1) fails with an AggregateError of one error per address.
  const inner = (err as { errors?: unknown }).errors;
  if (Array.isArray(inner) && inner.length > 0) return inner.every((e) => isDatabaseUnavailable(e, depth + 1));
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && isDatabaseUnavailable(cause, depth + 1);
}

/**
 * True when `err` says the connection it came from is gone, not only this statement: a socket error,
 * postgres.js's CONNECTION_CLOSED / ENDED / DESTROYED, class 08, or the server ending the session
 * (57P01 admin_shutdown, as `pg_terminate_backend` sends; 57P02 crash_shutdown). A statement of a
 * transaction failing so means every other statement of it fails too (src/db/pgTx.ts). Not the
 * codes after which the session lives on: 57014 (a cancelled statement), 25006, 53300, 57P03.
 */
export function isConnectionLost(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 3) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === 'QUERY_DEADLINE') return false; // unanswered, not known lost: pgTx.ts decides
    if (CONNECTION_CODES.has(code) || /^(08...|57P0[12])$/.test(code)) return true;
  }
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && isConnectionLost(cause, depth + 1);
}

/**
 * True for the failure postgres.js 3.4.9 leaves unhandled: a new connection first asks the server
 * for the array types (`fetch_types`), and when that query fails (the connection lost or ended
 * during it, or the server cancelling or terminating it) the rejection of the promise it discarded
 * has no handler (porsager/postgres#1192, #1205, #1223), so Node and Deno end the process for
 * it. The error carries that internal query's text, which no statement of this service resembles.
 * The connection itself is closed or reconnects, and whatever waited on it fails or is retried on
 * its own: the rejection is safe to drop (src/node/postgresGuard.ts, src/deno.ts).
 */
export function isDriverTypeFetchFailure(reason: unknown): boolean {
  if (reason === null || typeof reason !== 'object') return false;
  const query = (reason as { query?: unknown }).query;
  return typeof query === 'string' && /\bselect b\.oid, b\.typarray\s+from pg_catalog\.pg_type a\b/.test(query);
}
