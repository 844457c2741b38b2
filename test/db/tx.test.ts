// Db.tx semantics, the same on both stores; on Postgres BEGIN and COMMIT are pipelined with the
// transaction's statements (src/db/pgTx.ts), so what postgres.js's sql.begin guaranteed is checked
// here: a caught statement error still fails the transaction, savepoints fail alone, commitWith
// commits with its batch, hooks run only after a commit, and a connection lost mid-transaction
// sends nothing more on it (a statement sent there would run outside the transaction); a terminated
// backend fails everything waiting on it within a second, and nothing waiting for a connection or
// queued in the pool is stranded by the pool's renewal (docs/operations.md §1).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, STORES, PG_URL } from '../harness.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { PG_DRIVER_DEFAULTS } from '../../src/db/pgOptions.ts';
import { isDatabaseUnavailable } from '../../src/db/errors.ts';
import type { Db } from '../../src/db/types.ts';
import { startTcpProxy } from '../process/tcpProxy.ts';

const count = async (db: Db) => Number((await db.query<{ n: string }>('SELECT count(*)::text AS n FROM t'))[0].n);

for (const kind of STORES) {
  describe(`[${kind}] Db.tx`, () => {
    const withDb = (name: string, fn: (db: Db) => Promise<void>) =>
      test(name, async () => {
        const store = await openStore(kind);
        try {
          await store.db.exec('CREATE TABLE t (id int PRIMARY KEY, v text)');
          await fn(store.db);
        } finally {
          await store.drop();
        }
      });

    withDb('commits when fn resolves; returns its value; hooks run after the commit', async (db) => {
      const seen: number[] = [];
      const r = await db.tx(async (tx) => {
        await tx.query('INSERT INTO t VALUES (1, $1)', ['a']);
        tx.afterCommit(async () => seen.push(await count(db)));
        return 'done';
      });
      assert.equal(r, 'done');
      assert.deepEqual(seen, [1], 'the hook saw the committed row');
    });

    withDb('rolls back when fn throws; hooks do not run', async (db) => {
      let ran = false;
      await assert.rejects(
        db.tx(async (tx) => {
          await tx.batch([
            { text: 'INSERT INTO t VALUES (1, $1)', params: ['a'] },
            { text: 'INSERT INTO t VALUES (2, $1)', params: ['b'] },
          ]);
          tx.afterCommit(() => {
            ran = true;
          });
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await count(db), 0);
      assert.equal(ran, false);
    });

    withDb('a statement error that fn catches still fails the transaction: nothing is written', async (db) => {
      await db.query('INSERT INTO t VALUES (1, $1)', ['a']);
      const err = await db
        .tx(async (tx) => {
          await tx.query('INSERT INTO t VALUES (2, $1)', ['b']);
          await tx.query('INSERT INTO t VALUES (1, $1)', ['dup']).catch(() => {}); // swallowed
          return 'fn thinks it succeeded';
        })
        .then(
          () => null,
          (e) => e,
        );
      assert.ok(err, 'the transaction must not report success');
      assert.equal(err.code, '23505', `the statement's own error comes back: ${err}`);
      assert.equal(await count(db), 1, 'row 2 was rolled back');
    });

    withDb('a failed savepoint fails alone: the rest commits; its hooks never run', async (db) => {
      const hooks: string[] = [];
      await db.tx(async (tx) => {
        await tx.query('INSERT INTO t VALUES (1, $1)', ['kept']);
        await assert.rejects(
          tx.savepoint(async (sp) => {
            await sp.query('INSERT INTO t VALUES (2, $1)', ['undone']);
            sp.afterCommit(() => {
              hooks.push('failed savepoint');
            });
            await sp.query('INSERT INTO t VALUES (1, $1)', ['dup']);
          }),
          (e: any) => e.code === '23505',
        );
        await tx.savepoint(async (sp) => {
          await sp.query('INSERT INTO t VALUES (3, $1)', ['kept too']);
          sp.afterCommit(() => {
            hooks.push('good savepoint');
          });
        });
        // A JS error inside a savepoint is rolled back the same way.
        await assert.rejects(
          tx.savepoint(async (sp) => {
            await sp.query('INSERT INTO t VALUES (4, $1)', ['undone']);
            throw new Error('js');
          }),
          /js/,
        );
      });
      const rows = await db.query<{ id: number }>('SELECT id FROM t ORDER BY id');
      assert.deepEqual(
        rows.map((r) => r.id),
        [1, 3],
      );
      assert.deepEqual(hooks, ['good savepoint']);
    });

    withDb('commitWith commits with its batch and returns its rows; nothing may follow it', async (db) => {
      let after: unknown;
      const rows = await db.tx(async (tx) => {
        await tx.query('INSERT INTO t VALUES (1, $1)', ['a']);
        const out = await tx.commitWith([
          { text: 'INSERT INTO t VALUES (2, $1) RETURNING id', params: ['b'] },
          { text: 'UPDATE t SET v = $1 WHERE id = 1 RETURNING v', params: ['a2'] },
        ]);
        after = await tx.query('SELECT 1').then(
          () => 'sent',
          (e) => String(e),
        );
        return out;
      });
      assert.deepEqual(
        rows.map((r) => [...r]),
        [[{ id: 2 }], [{ v: 'a2' }]],
      );
      assert.match(String(after), /after the transaction's commit/);
      assert.equal(await count(db), 2);
    });

    withDb('commitWith with a failing statement rolls everything back and rejects with its error', async (db) => {
      await db.query('INSERT INTO t VALUES (1, $1)', ['a']);
      let ran = false;
      await assert.rejects(
        db.tx(async (tx) => {
          tx.afterCommit(() => {
            ran = true;
          });
          await tx.query('INSERT INTO t VALUES (2, $1)', ['b']);
          await tx.commitWith([
            { text: 'INSERT INTO t VALUES (3, $1)', params: ['c'] },
            { text: 'INSERT INTO t VALUES (1, $1)', params: ['dup'] },
          ]);
        }),
        (e: any) => e.code === '23505',
      );
      assert.equal(await count(db), 1);
      assert.equal(ran, false);
    });

    withDb('commitWith after a caught statement error: rolled back, not reported committed', async (db) => {
      await db.query('INSERT INTO t VALUES (1, $1)', ['a']);
      await assert.rejects(
        db.tx(async (tx) => {
          await tx.query('INSERT INTO t VALUES (1, $1)', ['dup']).catch(() => {});
          await tx.commitWith([{ text: 'INSERT INTO t VALUES (2, $1)', params: ['b'] }]);
        }),
      );
      assert.equal(await count(db), 1);
    });

    withDb('a transaction that sends nothing costs nothing and returns', async (db) => {
      assert.equal(await db.tx(async () => 7), 7);
      await assert.rejects(
        db.tx(async () => {
          throw new Error('early');
        }),
        /early/,
      );
      // The pool is fine afterwards (no connection was left reserved).
      await Promise.all(Array.from({ length: 25 }, (_, i) => db.tx((tx) => tx.query('INSERT INTO t VALUES ($1, $2)', [i, 'x']))));
      assert.equal(await count(db), 25);
    });

    withDb('concurrent transactions on one row serialise (FOR UPDATE) and all commit', async (db) => {
      await db.query('INSERT INTO t VALUES (1, $1)', ['0']);
      await Promise.all(
        Array.from({ length: 20 }, () =>
          db.tx(async (tx) => {
            const [r] = await tx.query<{ v: string }>('SELECT v FROM t WHERE id = 1 FOR UPDATE');
            await tx.commitWith([{ text: 'UPDATE t SET v = $1 WHERE id = 1', params: [String(Number(r.v) + 1)] }]);
          }),
        ),
      );
      assert.equal((await db.query<{ v: string }>('SELECT v FROM t WHERE id = 1'))[0].v, '20');
    });
  });
}

test('[postgres] a connection lost mid-transaction: later statements fail as unavailable, none runs outside the transaction, the pool recovers', {
  skip: PG_URL ? false : 'needs TEST_DATABASE_URL',
}, async () => {
  const store = await openStore('postgres');
  const target = new URL(PG_URL!);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const via = new URL(PG_URL!);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.port);
  const schema = (await store.db.query<{ s: string }>('SELECT current_schema() AS s'))[0].s;
  const db = openPostgres(via.toString(), { schema, max: 2 });
  try {
    await store.db.exec('CREATE TABLE t (id int PRIMARY KEY, v text)');
    const err = await db
      .tx(async (tx) => {
        await tx.query('INSERT INTO t VALUES (1, $1)', ['before the cut']);
        await proxy.cut();
        await new Promise((r) => setTimeout(r, 100));
        await proxy.restore(); // the pool may reconnect the same connection object for someone else
        // Keep the pool busy so that a reconnected connection would be handed out.
        const other = db.query('SELECT 1').catch(() => {});
        const r = await tx.query('INSERT INTO t VALUES (2, $1)', ['after the cut']).then(
          () => null,
          (e) => e,
        );
        await other;
        if (r) throw r;
        return null;
      })
      .then(
        () => null,
        (e) => e,
      );
    assert.ok(err, 'the transaction must fail');
    assert.ok(isDatabaseUnavailable(err), `an outage error (503 upstream), got ${err?.code}: ${err}`);
    assert.equal(await count(store.db), 0, 'neither row: the first rolled back with the lost session, the second never ran elsewhere');
    // The pool serves again (it may take the renewal's second).
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      ok = await db
        .tx((tx) => tx.commitWith([{ text: 'INSERT INTO t VALUES (3, $1)', params: ['later'] }]))
        .then(
          () => true,
          () => false,
        );
      if (!ok) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(ok, 'a transaction succeeds after the outage');
    assert.equal(await count(store.db), 1);
  } finally {
    await db.close();
    await proxy.close();
    await store.drop();
  }
});

test('[postgres] nothing waits forever: a reservation and a statement past their bounds fail as unavailable; a late reservation goes back to the pool', {
  skip: PG_URL ? false : 'needs TEST_DATABASE_URL',
}, async () => {
  const { pipelinedTx } = await import('../../src/db/pgTx.ts');
  const postgres = (await import('postgres')).default;
  const sql = postgres(PG_URL!, { max: 2, onnotice: () => {} });
  try {
    // A reservation that never comes (a replaced pool's queue): QUERY_DEADLINE.
    const never = () => new Promise<never>(() => {});
    const e1 = await pipelinedTx(never as never, async () => 1, { reserveMs: 100, statementMs: 1000 }).then(
      () => null,
      (e) => e,
    );
    assert.equal(e1?.code, 'QUERY_DEADLINE');
    assert.ok(isDatabaseUnavailable(e1));
    // One that comes late is released at once, not leaked.
    let released = 0;
    const late = () =>
      new Promise((resolve) =>
        setTimeout(
          () =>
            resolve({
              release: () => {
                released++;
              },
            }),
          150,
        ),
      );
    const e2 = await pipelinedTx(late as never, async () => 1, { reserveMs: 50, statementMs: 1000 }).then(
      () => null,
      (e) => e,
    );
    assert.equal(e2?.code, 'QUERY_DEADLINE');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(released, 1);
    // A statement nobody answers in time: the transaction fails as unavailable, nothing more is sent on that connection.
    let after: unknown;
    const e3 = await pipelinedTx(
      () => sql.reserve() as never,
      async (tx) => {
        await tx.query('SELECT pg_sleep(1)').catch((e) => {
          after = tx.query('SELECT 1').then(
            () => 'sent',
            (x) => x.code,
          );
          throw e;
        });
      },
      { reserveMs: 1000, statementMs: 100 },
    ).then(
      () => null,
      (e) => e,
    );
    assert.equal(e3?.code, 'QUERY_DEADLINE');
    assert.equal(await after, 'QUERY_DEADLINE', 'a later statement of that transaction is refused, not sent');
    // The pool still serves on its other connection.
    assert.deepEqual([...(await sql`SELECT 2 AS n`)], [{ n: 2 }]);
  } finally {
    await sql.end({ timeout: 1 });
  }
});

/**
 * A Postgres store's schema with a second pool of our own on it, its connections named `app` so
 * that `terminate()` ends exactly their backends (as `pg_terminate_backend` in an incident would);
 * `terminate` resolves with the time it was sent.
 */
async function terminable(tag: string, opts: { max: number; groupCommit: boolean }) {
  const store = await openStore('postgres');
  const schema = (await store.db.query<{ s: string }>('SELECT current_schema() AS s'))[0].s;
  const app = `tx_${tag}_${process.pid}`;
  const db = openPostgres(PG_URL!, {
    schema,
    max: opts.max,
    applicationName: app,
    driver: { ...PG_DRIVER_DEFAULTS, groupCommit: opts.groupCommit },
  });
  await store.db.exec('CREATE TABLE t (id int PRIMARY KEY, v text)');
  return {
    db,
    terminate: async () => {
      const at = performance.now();
      const n = await store.db.query<{ n: number }>(
        'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1',
        [app],
      );
      assert.ok(n[0].n > 0, 'a backend was terminated');
      return at;
    },
    close: async () => {
      await db.close();
      await store.drop();
    },
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

for (const groupCommit of [false, true])
  test(`[postgres] a terminated backend fails every statement waiting on it within a second, those postgres.js held back included (group commit ${groupCommit ? 'on' : 'off'})`, {
    skip: PG_URL ? false : 'needs TEST_DATABASE_URL',
  }, async () => {
    const t = await terminable(`held_${groupCommit ? 'g' : 'o'}`, { max: 2, groupCommit });
    try {
      const settled: Array<{ code: string; at: number }> = [];
      // On a fresh connection a statement with parameters is described first, and postgres.js holds
      // every later statement of the reservation back in a queue of its own until it is answered.
      const member = (id: number) =>
        t.db.tx(
          async (tx) => {
            const sent = [
              tx.query('SELECT pg_sleep(5), $1::int AS n', [id]),
              tx.query('SELECT $1::int AS n', [id + 1]),
              tx.query('INSERT INTO t VALUES ($1, $2)', [id, 'never']),
            ].map((p) =>
              p.then(
                () => ({ code: 'answered', at: performance.now() }),
                (e) => ({ code: String(e.code), at: performance.now() }),
              ),
            );
            settled.push(...(await Promise.all(sent)));
            return 'committed';
          },
          { group: [`k${id}`] },
        );
      // With group commit on, both run in one transaction (they arrive in one turn, no key in common).
      const running = [member(10), member(20)].map((p) =>
        p.then(
          () => ({ err: null as unknown, at: performance.now() }),
          (err) => ({ err, at: performance.now() }),
        ),
      );
      await sleep(300);
      const killedAt = await t.terminate();
      const outcomes = await Promise.all(running);
      for (const o of outcomes) {
        assert.ok(o.err && isDatabaseUnavailable(o.err), `the transaction fails as unavailable (503 upstream): ${o.err}`);
        assert.ok(o.at - killedAt < 1_000, `the transaction failed ${Math.round(o.at - killedAt)} ms after the termination`);
      }
      assert.equal(settled.length, 6);
      for (const s of settled) {
        assert.notEqual(s.code, 'answered');
        assert.ok(s.at - killedAt < 1_000, `a statement (${s.code}) settled ${Math.round(s.at - killedAt)} ms after the termination`);
      }
      assert.equal(await count(t.db), 0, 'nothing was written');
    } finally {
      await t.close();
    }
  });

test("[postgres] a transaction waiting for a connection when another's backend is terminated is served by the renewed pool at once", {
  skip: PG_URL ? false : 'needs TEST_DATABASE_URL',
}, async () => {
  const t = await terminable('waiting', { max: 1, groupCommit: false });
  try {
    const holder = t.db
      .tx((tx) => tx.query('SELECT pg_sleep(5), $1::int AS n', [1]))
      .then(
        () => ({ err: null as unknown, at: performance.now() }),
        (err) => ({ err, at: performance.now() }),
      );
    await sleep(200);
    // The pool's only connection is taken: these wait for it, in the pool the loss replaces.
    const waiting = t.db
      .tx((tx) => tx.commitWith([{ text: 'INSERT INTO t VALUES ($1, $2)', params: [2, 'waited'] }]))
      .then(
        () => ({ err: null as unknown, at: performance.now() }),
        (err) => ({ err, at: performance.now() }),
      );
    const queued = [3, 4, 5].map((n) =>
      t.db.query<{ n: number }>('SELECT $1::int AS n', [n]).then(
        (rows) => ({ n: rows[0].n as number | null, at: performance.now() }),
        () => ({ n: null, at: performance.now() }),
      ),
    );
    await sleep(200);
    const killedAt = await t.terminate();
    const h = await holder;
    assert.ok(h.err && isDatabaseUnavailable(h.err), `the holder's transaction fails as unavailable: ${h.err}`);
    assert.ok(h.at - killedAt < 1_000, `the holder failed ${Math.round(h.at - killedAt)} ms after the termination`);
    const w = await waiting;
    assert.equal(w.err, null, `the waiting transaction commits: ${w.err}`);
    assert.ok(w.at - killedAt < 2_000, `the waiting transaction committed ${Math.round(w.at - killedAt)} ms after the termination`);
    for (const [i, q] of (await Promise.all(queued)).entries()) {
      assert.equal(q.n, i + 3, 'a queued autocommit statement is answered');
      assert.ok(q.at - killedAt < 2_000, `a queued statement was answered ${Math.round(q.at - killedAt)} ms after the termination`);
    }
    assert.equal(await count(t.db), 1);
  } finally {
    await t.close();
  }
});
