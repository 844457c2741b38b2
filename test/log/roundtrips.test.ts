// Round trips per lifecycle (create → fund → passing delivery), counted at the Db interface as
// perf-anatomy.md §2 counted them: an autocommit query, BEGIN, each query or pipelined batch and
// COMMIT are one each. The integrator's batches are counted apart (at c=1 one batch per closing;
// under load one batch serves many closings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, STORES } from '../harness.ts';
import { createApp } from '../../src/app.ts';
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
      if (stmts.some((s) => s.text.includes('pg_advisory_xact_lock'))) {
        inIntegrator = true;
        c.commands -= 1; // its BEGIN was counted before we knew
        c.integrator += 1;
      }
      bump();
      return q.batch(stmts);
    },
  });
  const wrapped: Db = {
    ...db,
    ...wrapQ(db),
    tx: async <T>(fn: (tx: Tx) => Promise<T>) => {
      c.commands++; // BEGIN
      const r = await db.tx((t) => fn({ ...t, ...wrapQ(t) }));
      bump(); // COMMIT
      inIntegrator = false;
      return r;
    },
  };
  return { db: wrapped, c };
}

for (const kind of STORES) {
  test(`[${kind}] a lifecycle costs at most 14 round trips (was 19), plus one integration batch of 4`, async () => {
    const store = await openStore(kind);
    const { db, c } = counting(store.db);
    const app = createApp({ db, config: parseConfig({ DATA_DIR: ':memory:' }) });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await app.fetch(new Request(`http://t${path}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined }), { ip: '127.0.0.1' });
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
      return res.json() as Promise<any>;
    };
    try {
      const payer = (await call('POST', '/v1/agents', { label: 'payer' })).id;
      const payee = (await call('POST', '/v1/agents', { label: 'payee' })).id;
      // Warm: the issuer key's material is read once per key id, then cached.
      const warm = await call('POST', '/v1/escrows', { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer, payeeAgentId: payee });
      await call('POST', `/v1/escrows/${warm.id}/fund`);
      await call('POST', `/v1/escrows/${warm.id}/delivery`, { agentId: payee, payload: { title: 't' } });
      const steps: number[] = [];
      const mark = () => { steps.push(c.commands); };
      c.commands = 0; c.integrator = 0;
      const e = await call('POST', '/v1/escrows', { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer, payeeAgentId: payee });
      mark();
      await call('POST', `/v1/escrows/${e.id}/fund`);
      mark();
      const d = await call('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 't' } });
      mark();
      assert.ok(d.proof);
      const perStep = [steps[0], steps[1] - steps[0], steps[2] - steps[1]];
      assert.deepEqual(perStep, [4, 4, 5], `create, fund, deliver round trips: ${perStep}`);
      assert.ok(steps[2] <= 14);
      assert.equal(c.integrator, 4, 'one integration batch: BEGIN, two pipelined batches, COMMIT');
    } finally {
      await store.drop();
    }
  });
}
