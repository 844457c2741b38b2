// DATABASE_URL naming a Unix-domain socket, in libpq's two spellings (src/db/postgres.ts socketUrl):
// postgres.js 3.4.9 reads neither from a URL, so openPostgres translates them. The translation is
// checked here, and on real Postgres a connection through the server's socket is made when the
// server has one where Debian puts it (this machine's and CI's do).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { socketUrl, openPostgres } from '../../src/db/postgres.ts';
import { describeDatabaseUrl } from '../../src/node/openStore.ts';
import { isDatabaseUnavailable, isDriverTypeFetchFailure } from '../../src/db/errors.ts';
import { PG_URL } from '../harness.ts';

test('socketUrl: ?host=/dir becomes the host option; other parameters, user and port stay', () => {
  assert.deepEqual(socketUrl('postgres://postgres@/test?host=/var/run/postgresql'), {
    url: 'postgres://postgres@localhost/test',
    host: '/var/run/postgresql',
  });
  assert.deepEqual(socketUrl('postgresql://u:p%40ss@:5433/db?search_path=s&host=%2Ftmp&application_name=a'), {
    url: 'postgresql://u:p%40ss@localhost:5433/db?search_path=s&application_name=a',
    host: '/tmp',
  });
  assert.deepEqual(socketUrl('postgres:///db?host=/run/pg'), { url: 'postgres://localhost/db', host: '/run/pg' });
});

test('socketUrl: a percent-encoded directory as the host', () => {
  assert.deepEqual(socketUrl('postgres://postgres@%2Fvar%2Frun%2Fpostgresql/test'), {
    url: 'postgres://postgres@localhost/test',
    host: '/var/run/postgresql',
  });
  assert.deepEqual(socketUrl('postgres://postgres@%2fvar%2frun%2fpostgresql:5433/test?x=1'), {
    url: 'postgres://postgres@localhost:5433/test?x=1',
    host: '/var/run/postgresql',
  });
});

test('socketUrl: TCP URLs, a host parameter that is not a directory, and non-postgres strings are left alone', () => {
  for (const u of [
    'postgres://postgres@127.0.0.1:5432/test',
    'postgres://postgres@db.internal/test?host=replica.internal',
    'postgres://postgres@[::1]:5432/test?sslmode=disable',
    'mysql://x@%2Ftmp/db',
    'not a url',
  ])
    assert.deepEqual(socketUrl(u), { url: u });
});

const SOCKET_DIR = '/var/run/postgresql';
const pg = PG_URL ? new URL(PG_URL) : undefined;
const socketHere =
  pg !== undefined &&
  ['127.0.0.1', 'localhost', '[::1]'].includes(pg.hostname) &&
  existsSync(`${SOCKET_DIR}/.s.PGSQL.${pg.port || '5432'}`);
test("openPostgres connects through the Unix socket of TEST_DATABASE_URL's server", {
  skip: socketHere ? false : 'needs TEST_DATABASE_URL on this host with its socket in /var/run/postgresql',
}, async () => {
  const user = pg!.username ? `${pg!.username}${pg!.password ? `:${pg!.password}` : ''}@` : '';
  for (const url of [
    `postgres://${user}:${pg!.port || '5432'}/${pg!.pathname.slice(1)}?host=${SOCKET_DIR}`,
    `postgres://${user}${encodeURIComponent(SOCKET_DIR)}:${pg!.port || '5432'}/${pg!.pathname.slice(1)}`,
  ]) {
    const db = openPostgres(url, { max: 1 });
    try {
      // inet_server_addr() is NULL on a Unix-socket connection, the server's address over TCP.
      const [row] = await db.query<{ addr: string | null; db: string }>(
        'SELECT inet_server_addr()::text AS addr, current_database() AS db',
      );
      assert.equal(row.addr, null, `${url}: not a Unix-socket connection`);
      assert.equal(row.db, pg!.pathname.slice(1));
    } finally {
      await db.close();
    }
  }
});

test('a libpq multi-host URL is described by its hosts, never its password', () => {
  assert.equal(describeDatabaseUrl('postgres://u:secret@h1:5432,h2:5433/escrow?target_session_attrs=read-write'), 'h1:5432,h2:5433/escrow');
});

test('a read-only refusal (25006: the server is, or has become, a standby) is an outage, not a fault', () => {
  assert.equal(isDatabaseUnavailable({ code: '25006' }), true);
  assert.equal(isDatabaseUnavailable({ code: '23505' }), false);
});

test('a statement the server cancelled (57014: statement_timeout, pg_cancel_backend) is an outage, not a fault', () => {
  assert.equal(isDatabaseUnavailable({ code: '57014' }), true);
  assert.equal(isDatabaseUnavailable({ code: '57000' }), false);
});

test("postgres.js's discarded read of the array types is recognised by its query, and nothing else is", () => {
  const typesQuery = `
      select b.oid, b.typarray
      from pg_catalog.pg_type a
      left join pg_catalog.pg_type b on b.oid = a.typelem
      where a.typcategory = 'A'
      group by b.oid, b.typarray
      order by b.oid
    `;
  assert.equal(isDriverTypeFetchFailure(Object.assign(new Error('x'), { code: 'CONNECTION_DESTROYED', query: typesQuery })), true);
  assert.equal(isDriverTypeFetchFailure(Object.assign(new Error('x'), { code: '57014', query: typesQuery })), true);
  assert.equal(isDriverTypeFetchFailure(Object.assign(new Error('x'), { code: 'CONNECTION_DESTROYED', query: 'SELECT 1' })), false);
  assert.equal(isDriverTypeFetchFailure(new Error('select b.oid, b.typarray from pg_catalog.pg_type a')), false);
  assert.equal(isDriverTypeFetchFailure(undefined), false);
});
