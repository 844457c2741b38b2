// Round trips per lifecycle (create → fund → passing delivery), counted at the Db interface as
// Postgres sees them: an autocommit query, each query or pipelined batch one each;
// BEGIN rides with a transaction's first statement (src/db/pgTx.ts), and COMMIT with its last batch
// when that is sent by commitWith, else it is one more. The integrator's batches are counted apart
// (at c=1 one batch per closing; under load one batch serves many closings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, requester, STORES } from '../harness.ts';
import { createApp, type App } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import type { Db, Queryable, Row, Stmt, Tx } from '../../src/db/types.ts';
import { PASSING_TERMS } from '../fixtures.ts';

function counting(db: Db) {
  const c = { commands: 0, integrator: 0 };
  let inIntegrator = false;
  const bump = () => (inIntegrator ? c.integrator++ : c.commands++);
  const wrapQ = (q: Queryable): Queryable => ({
    query: <T extends Row>(text: string, params?: unknown[]) => {
      bump();
      return q.query<T>(text, params);
    },
    batch: (stmts: Stmt[]) => {
      if (stmts.some((s) => s.text.includes('pg_advisory_xact_lock'))) inIntegrator = true;
      bump();
      return q.batch(stmts);
    },
  });
  const wrapped: Db = {
    ...db,
    ...wrapQ(db),
    tx: async <T>(fn: (tx: Tx) => Promise<T>) => {
      let committedWith = false;
      const r = await db.tx((t) =>
        fn({
          ...t,
          ...wrapQ(t),
          commitWith: (stmts: Stmt[]) => {
            if (stmts.some((s) => s.text.includes('pg_advisory_xact_lock'))) inIntegrator = true;
            bump(); // the last batch and COMMIT: one write, one answer
            committedWith = true;
            return t.commitWith(stmts);
          },
        }),
      );
      if (!committedWith) bump(); // COMMIT on its own
      inIntegrator = false;
      return r;
    },
  };
  return { db: wrapped, c };
}

/** Requests through the harness that must succeed (status below 300): each answer's JSON. */
function succeeding(app: App) {
  const req = requester(app);
  return async (method: string, path: string, body?: unknown) => {
    const res = await req(method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };
}

for (const kind of STORES) {
  test(`[${kind}] a lifecycle costs 6 round trips (was 19, then 13, then 7), plus one integration batch of 1`, async () => {
    const store = await openStore(kind);
    const { db, c } = counting(store.db);
    const app = createApp({ db, config: parseConfig({ DATA_DIR: ':memory:' }) });
    const call = succeeding(app);
    try {
      const payer = (await call('POST', '/v1/agents', { label: 'payer' })).id;
      const payee = (await call('POST', '/v1/agents', { label: 'payee' })).id;
      // Warm: the issuer key's material is read once per key id, then cached.
      const warm = await call('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer,
        payeeAgentId: payee,
      });
      await call('POST', `/v1/escrows/${warm.id}/fund`);
      await call('POST', `/v1/escrows/${warm.id}/delivery`, { agentId: payee, payload: { title: 't' } });
      const steps: number[] = [];
      const mark = () => {
        steps.push(c.commands);
      };
      c.commands = 0;
      c.integrator = 0;
      const e = await call('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer,
        payeeAgentId: payee,
      });
      mark();
      await call('POST', `/v1/escrows/${e.id}/fund`);
      mark();
      const d = await call('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 't' } });
      mark();
      assert.ok(d.proof);
      const perStep = [steps[0], steps[1] - steps[0], steps[2] - steps[1]];
      // deliver: the lock with the agent's key and the fault counter's state, then the writes with COMMIT
      // (no custody statement: no sandbox fault was pending).
      assert.deepEqual(perStep, [2, 2, 2], `create, fund, deliver round trips: ${perStep}`);
      assert.ok(steps[2] <= 14);
      // The warm lifecycle's batch left the integrator its tip: this closing's batch is one pipelined
      // write (integrateKnown), BEGIN and COMMIT riding with it.
      assert.equal(c.integrator, 1, 'one integration batch of one round trip');
      // With a sandbox fault pending (POST /v1/sandbox/custody/fail-next), the lock's read sees it and
      // custody spends it with one more round trip: the settlement fails, and the fault is used up.
      const f = await call('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer,
        payeeAgentId: payee,
      });
      await call('POST', `/v1/escrows/${f.id}/fund`);
      assert.equal((await call('POST', '/v1/sandbox/custody/fail-next', { count: 1 })).failNext, 1);
      c.commands = 0;
      const failed = await call('POST', `/v1/escrows/${f.id}/delivery`, { agentId: payee, payload: { title: 't' } });
      assert.equal(failed.proof, undefined, 'custody failed: no proof');
      assert.equal(c.commands, 3, 'the lock, the fault counter, the writes with COMMIT');
      const [{ fail_next }] = await store.db.query<{ fail_next: number }>('SELECT fail_next FROM custody_faults WHERE id = 1');
      assert.equal(fail_next, 0);
    } finally {
      await store.drop();
    }
  });
}

/**
 * Statements per lifecycle, as the database receives them. Postgres: every statement postgres.js
 * writes (BEGIN and COMMIT included), counted by the driver's debug hook, so the integration batch
 * each closing waits for is in its delivery's count. PGlite: counted at the Db interface, where each
 * statement is one exchange with the embedded server, plus the BEGIN and COMMIT its transaction
 * always sends (PGlite's transaction API begins at once and cannot leave a lone statement alone).
 */
function pgliteStatements(db: Db) {
  const c = { n: 0 };
  const wrapQ = (q: Queryable): Queryable => ({
    query: <T extends Row>(text: string, params?: unknown[]) => {
      c.n++;
      return q.query<T>(text, params);
    },
    batch: (stmts: Stmt[]) => {
      c.n += stmts.length;
      return q.batch(stmts);
    },
  });
  const wrapTx = (t: Tx): Tx => ({
    ...t,
    ...wrapQ(t),
    commitWith: (stmts: Stmt[]) => {
      c.n += stmts.length;
      return t.commitWith(stmts);
    },
    savepoint: (fn) => {
      c.n += 2; // SAVEPOINT, RELEASE
      return t.savepoint((inner) => fn(wrapTx(inner)));
    },
  });
  const wrapped: Db = {
    ...db,
    ...wrapQ(db),
    tx: <T>(fn: (tx: Tx) => Promise<T>) => {
      c.n += 2; // BEGIN, COMMIT
      return db.tx((t) => fn(wrapTx(t)));
    },
  };
  return { db: wrapped, c };
}

for (const kind of STORES) {
  // Before one write per command (a statement per row written, the lock and the read apart, an
  // integration batch of 7): 5 + 6 + 19 = 30 on both stores. Now: create is its parties' read and one
  // write, alone on Postgres (its own transaction); fund and delivery are BEGIN, the lock with its
  // read, one write, COMMIT; the integration batch is one statement (with BEGIN and COMMIT on PGlite).
  const expected = kind === 'postgres' ? { perStep: [2, 4, 5], total: 11 } : { perStep: [4, 4, 7], total: 15 };
  test(`[${kind}] a lifecycle sends ${expected.total} statements, BEGIN, COMMIT and its integration batch included`, async () => {
    const c = { n: 0 };
    const store =
      kind === 'postgres'
        ? await openStore(kind, {
            onStatement: () => {
              c.n++;
            },
          })
        : await openStore(kind);
    const counted = kind === 'postgres' ? { db: store.db, c } : pgliteStatements(store.db);
    const app = createApp({ db: counted.db, config: parseConfig({ DATA_DIR: ':memory:' }) });
    const call = succeeding(app);
    try {
      const payer = (await call('POST', '/v1/agents', { label: 'payer' })).id;
      const payee = (await call('POST', '/v1/agents', { label: 'payee' })).id;
      const lifecycle = async () => {
        const steps: number[] = [];
        const at0 = counted.c.n;
        const e = await call('POST', '/v1/escrows', {
          amount: '1',
          asset: 'USDC',
          terms: PASSING_TERMS,
          payerAgentId: payer,
          payeeAgentId: payee,
        });
        steps.push(counted.c.n - at0);
        await call('POST', `/v1/escrows/${e.id}/fund`);
        steps.push(counted.c.n - at0 - steps[0]);
        const d = await call('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 't' } });
        steps.push(counted.c.n - at0 - steps[0] - steps[1]);
        assert.ok(d.proof);
        // The proof is in the log when the delivery answers: its integration batch was counted.
        const p = await app.fetch(new Request(`http://t/v1/log/proof/${d.proof.id}`), { ip: '127.0.0.1' });
        assert.equal(p.status, 200);
        return steps;
      };
      await lifecycle(); // warm: the issuer key is cached and the integrator has its tip
      const perStep = await lifecycle();
      assert.deepEqual(perStep, expected.perStep, `create, fund, deliver (with its integration) statements: ${perStep}`);
      assert.equal(perStep[0] + perStep[1] + perStep[2], expected.total);
    } finally {
      await store.drop();
    }
  });
}
