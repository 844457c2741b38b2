// Group commit (src/db/groupCommit.ts): transactions that name their keys and arrive together share
// one BEGIN … COMMIT on Postgres. Counted with the driver's statement tap (every statement written
// to the server, BEGIN and COMMIT included). Postgres only: PGlite has one connection and ignores it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeHarness, openStore, PG_URL, type Harness } from '../harness.ts';
import { funded } from '../fixtures.ts';
import type { Db, Tx } from '../../src/db/types.ts';
import { sqlState, UNIQUE_VIOLATION } from '../../src/db/types.ts';

/** Counts of the transaction-control statements the server was sent since the last reset. */
function tap() {
  const c = { begin: 0, commit: 0, rollback: 0 };
  return {
    c,
    onStatement: (text: string) => {
      if (text === 'BEGIN') c.begin++;
      else if (text === 'COMMIT') c.commit++;
      else if (text === 'ROLLBACK') c.rollback++;
    },
    reset: () => Object.assign(c, { begin: 0, commit: 0, rollback: 0 }),
  };
}

const skip = !PG_URL && 'needs TEST_DATABASE_URL (group commit is a Postgres setting)';

describe('group commit at the Db', { skip }, () => {
  const t = tap();
  let db: Db;
  let drop: () => Promise<void>;
  before(async () => {
    ({ db, drop } = await openStore('postgres', { onStatement: t.onStatement, driver: { groupCommit: true } }));
    await db.exec('CREATE TABLE gc_rows (k text PRIMARY KEY, n int NOT NULL)');
  });
  after(() => drop?.());

  /** A command on key k: reads its row under a row lock, then writes the next value (read-then-write in JS). */
  const bump = (k: string) => (tx: Tx) =>
    tx.query<{ n: number }>('SELECT n FROM gc_rows WHERE k = $1 FOR UPDATE', [k]).then(async (rows) => {
      const n = (rows[0]?.n ?? 0) + 1;
      await tx.commitWith([{ text: 'INSERT INTO gc_rows (k, n) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = $2', params: [k, n] }]);
      return n;
    });
  const value = async (k: string) => (await db.query<{ n: number }>('SELECT n FROM gc_rows WHERE k = $1', [k]))[0]?.n;

  test('transactions on different keys that arrive together commit as one', async () => {
    t.reset();
    const keys = Array.from({ length: 12 }, (_, i) => `a${i}`);
    const hooks: string[] = [];
    const out = await Promise.all(
      keys.map((k) =>
        db.tx(
          async (tx) => {
            tx.afterCommit(() => hooks.push(k));
            return bump(k)(tx);
          },
          { group: [k] },
        ),
      ),
    );
    assert.deepEqual(
      out,
      keys.map(() => 1),
    );
    assert.deepEqual(t.c, { begin: 1, commit: 1, rollback: 0 });
    assert.deepEqual(hooks.sort(), [...keys].sort());
    for (const k of keys) assert.equal(await value(k), 1);
  });

  test('without keys, or with the setting off, every transaction commits on its own', async () => {
    t.reset();
    await Promise.all(['b0', 'b1', 'b2'].map((k) => db.tx(bump(k))));
    assert.deepEqual(t.c, { begin: 3, commit: 3, rollback: 0 });
    const off = tap();
    const plain = await openStore('postgres', { onStatement: off.onStatement, driver: { groupCommit: false } });
    try {
      await plain.db.exec('CREATE TABLE gc_rows (k text PRIMARY KEY, n int NOT NULL)');
      off.reset();
      await Promise.all(['c0', 'c1', 'c2'].map((k) => plain.db.tx(bump(k), { group: [k] })));
      assert.deepEqual(off.c, { begin: 3, commit: 3, rollback: 0 });
    } finally {
      await plain.drop();
    }
  });

  test('two transactions on one key are never in one group: they behave as one after the other', async () => {
    await db.query("INSERT INTO gc_rows (k, n) VALUES ('same', 0), ('other', 0)");
    t.reset();
    const out = await Promise.all([
      db.tx(bump('same'), { group: ['same'] }),
      db.tx(bump('same'), { group: ['same'] }),
      db.tx(bump('other'), { group: ['other'] }),
    ]);
    assert.deepEqual(out.slice(0, 2).sort(), [1, 2]);
    assert.equal(await value('same'), 2);
    // The second on 'same' sent the first's group on its way (alone) and ran alone behind it; 'other' came after.
    assert.equal(t.c.commit, 3);
  });

  test('a member refused by its own check before writing fails alone; the others commit together', async () => {
    t.reset();
    const results = await Promise.allSettled(
      ['d0', 'd1', 'd2', 'd3'].map((k) =>
        db.tx(
          async (tx) => {
            await tx.query('SELECT n FROM gc_rows WHERE k = $1 FOR UPDATE', [k]);
            if (k === 'd2') throw new Error('refused by its own check');
            return bump(k)(tx);
          },
          { group: [k] },
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[2] as PromiseRejectedResult).reason), /own check/);
    assert.deepEqual(t.c, { begin: 1, commit: 1, rollback: 0 });
    assert.equal(await value('d2'), undefined);
    assert.equal(await value('d3'), 1);
  });

  test('a database error in one member rolls the group back and runs every member again on its own', async () => {
    await db.query("INSERT INTO gc_rows (k, n) VALUES ('taken', 7)");
    t.reset();
    const results = await Promise.allSettled(
      ['e0', 'e1', 'taken', 'e3'].map((k) =>
        db.tx(
          async (tx) => {
            // 'taken' inserts a key that exists: a unique violation, which aborts the whole transaction.
            await tx.commitWith([{ text: 'INSERT INTO gc_rows (k, n) VALUES ($1, 1)', params: [k] }]);
            return k;
          },
          { group: [k] },
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal(sqlState((results[2] as PromiseRejectedResult).reason), UNIQUE_VIOLATION);
    // The group's one transaction ended (its COMMIT, pipelined behind the statements, answered by a
    // rollback); each member then ran alone (a lone statement needs no BEGIN nor COMMIT).
    assert.equal(t.c.begin, 1);
    assert.equal(t.c.commit + t.c.rollback, 1);
    for (const k of ['e0', 'e1', 'e3']) assert.equal(await value(k), 1);
    assert.equal(await value('taken'), 7);
  });

  test('a member that wrote and then failed leaves nothing behind; the others run again and commit', async () => {
    t.reset();
    const hooks: string[] = [];
    let runs = 0;
    const results = await Promise.allSettled(
      ['f0', 'f1', 'f2'].map((k) =>
        db.tx(
          async (tx) => {
            tx.afterCommit(() => hooks.push(k));
            await tx.query('INSERT INTO gc_rows (k, n) VALUES ($1, 1)', [k]);
            if (k === 'f1') {
              runs++;
              throw new Error('failed after writing');
            }
            return k;
          },
          { group: [k] },
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal(runs, 2, 'the failing member ran in the group, then once alone');
    assert.equal(await value('f1'), undefined);
    assert.equal(await value('f0'), 1);
    assert.equal(await value('f2'), 1);
    assert.deepEqual(hooks.sort(), ['f0', 'f2']);
  });

  test('a member that needs a savepoint runs again on its own, where savepoints work', async () => {
    t.reset();
    const out = await Promise.all(
      ['g0', 'g1'].map((k) =>
        db.tx(
          async (tx) => {
            await tx
              .savepoint(async (sp) => {
                await sp.query('SELECT 1/0');
              })
              .catch(() => {});
            await tx.query('INSERT INTO gc_rows (k, n) VALUES ($1, 1)', [k]);
            return k;
          },
          { group: [k] },
        ),
      ),
    );
    assert.deepEqual(out, ['g0', 'g1']);
    assert.equal(await value('g0'), 1);
    assert.equal(await value('g1'), 1);
  });
});

describe('group commit through the front door', { skip }, () => {
  const t = tap();
  let h: Harness;
  let drop: () => Promise<void>;
  before(async () => {
    const store = await openStore('postgres', { onStatement: t.onStatement, driver: { groupCommit: true } });
    drop = store.drop;
    h = await makeHarness('postgres', {}, store);
  });
  after(() => drop?.());

  /** Funded escrows, each with its own parties. */
  const fundedEscrows = (n: number) => Promise.all(Array.from({ length: n }, () => funded(h)));

  test('concurrent funds of different escrows all succeed and commit together, each trail intact', async () => {
    const escrows = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const payer = await h.req('POST', '/v1/agents', { label: 'payer' });
        const payee = await h.req('POST', '/v1/agents', { label: 'payee' });
        const r = await h.req('POST', '/v1/escrows', {
          amount: '10',
          asset: 'USDC',
          terms: { description: 'a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] },
          payerAgentId: payer.body.id,
          payeeAgentId: payee.body.id,
        });
        assert.equal(r.status, 201, r.text);
        return r.body.id as string;
      }),
    );
    t.reset();
    const answers = await Promise.all(escrows.map((id) => h.req('POST', `/v1/escrows/${id}/fund`)));
    for (const a of answers) assert.equal(a.status, 200, a.text);
    // The requests reach their transactions in one turn of the event loop: one group, one COMMIT.
    assert.deepEqual(t.c, { begin: 1, commit: 1, rollback: 0 });
    for (const id of escrows) {
      const trail = await h.req('GET', `/v1/escrows/${id}/trail`);
      assert.equal(trail.status, 200, trail.text);
      assert.deepEqual(
        trail.body.entries.map((e: { event: string }) => e.event),
        ['escrow.created', 'escrow.funded'],
      );
    }
  });

  test('a command its own checks refuse fails alone in its batch; the others succeed', async () => {
    const escrows = await fundedEscrows(6);
    // The third is delivered already, so a second delivery is refused (409); the others close.
    const d = await h.req('POST', `/v1/escrows/${escrows[2].id}/delivery`, { agentId: escrows[2].payee.id, payload: { title: 'x' } });
    assert.equal(d.status, 201, d.text);
    t.reset();
    const answers = await Promise.all(
      escrows.map((e) => h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'report' } })),
    );
    answers.forEach((a, i) => {
      if (i === 2) assert.equal(a.status, 409, a.text);
      else {
        assert.equal(a.status, 201, a.text);
        assert.ok(a.body.proof, a.text);
      }
    });
    // One transaction for the five closings; nothing rolled back: the refused one only read.
    assert.deepEqual(t.c, { begin: 1, commit: 1, rollback: 0 });
    const trail = await h.req('GET', `/v1/escrows/${escrows[2].id}/trail`);
    assert.equal(trail.body.entries.filter((e: { event: string }) => e.event === 'delivery.submitted').length, 1);
  });

  test('one Idempotency-Key sent several times inside a batch of other commands has one effect and one answer', async () => {
    const escrows = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const payer = await h.req('POST', '/v1/agents', { label: 'payer' });
        const payee = await h.req('POST', '/v1/agents', { label: 'payee' });
        return { payer: payer.body.id as string, payee: payee.body.id as string };
      }),
    );
    const body = (p: { payer: string; payee: string }) => ({
      amount: '2',
      asset: 'USDC',
      terms: { description: 'd', checks: [] },
      payerAgentId: p.payer,
      payeeAgentId: p.payee,
    });
    const same = body(escrows[0]);
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => h.req('POST', '/v1/escrows', same, { 'idempotency-key': 'in-a-batch' })),
      ...escrows.slice(1).map((p, i) => h.req('POST', '/v1/escrows', body(p), { 'idempotency-key': `other-${i}` })),
    ]);
    for (const a of answers) assert.equal(a.status, 201, a.text);
    const keyed = answers.slice(0, 4);
    assert.equal(new Set(keyed.map((a) => a.text)).size, 1, 'every answer under the key is the first one');
    assert.equal(keyed.filter((a) => a.headers.get('idempotent-replayed') === 'true').length, 3);
    const ids = new Set(answers.map((a) => a.body.id));
    assert.equal(ids.size, 5);
    const mine = (await h.req('GET', '/v1/escrows')).body.escrows.filter((e: any) => e.payer.label === 'payer' && ids.has(e.id));
    assert.equal(mine.length, 5);
    // Funding with one key several times, beside other funds: funded once, the same answer each time.
    t.reset();
    const ids5 = [...ids] as string[];
    const funds = await Promise.all([
      ...Array.from({ length: 3 }, () => h.req('POST', `/v1/escrows/${ids5[0]}/fund`, undefined, { 'idempotency-key': 'fund-in-a-batch' })),
      ...ids5.slice(1).map((id) => h.req('POST', `/v1/escrows/${id}/fund`)),
    ]);
    for (const a of funds) assert.equal(a.status, 200, a.text);
    assert.equal(new Set(funds.slice(0, 3).map((a) => a.text)).size, 1);
    const trail = await h.req('GET', `/v1/escrows/${ids5[0]}/trail`);
    assert.equal(trail.body.entries.filter((e: { event: string }) => e.event === 'escrow.funded').length, 1);
  });
});
