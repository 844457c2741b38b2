// Statements per lifecycle (create → fund → passing delivery, its integration batch included), for
// the service and for the floor, counted at c=1 where nothing else runs on the counted pool
// (docs/statements.md §3). Postgres: every statement postgres.js writes,
// BEGIN and COMMIT included (the driver's debug hook). PGlite: every statement the Db layer runs,
// plus the BEGIN and COMMIT each PGlite transaction sends.
import { openPostgres } from '../src/db/postgres.ts';
import type { Db } from '../src/db/types.ts';
import { CFG, inProcessApp, newStore, tapStatements, type Store } from './lib.ts';
import { floorLifecycle, TERMS } from './lifecycle.ts';

const LIFECYCLES = 5;

/** The store's Db, counting into c. */
function counted(store: Store, c: { n: number }): { db: Db; close: () => Promise<unknown> } {
  if (store.kind === 'pglite')
    return {
      db: tapStatements(store.db, () => {
        c.n++;
      }),
      close: async () => {},
    };
  const db = openPostgres(CFG.databaseUrl!, {
    schema: store.name,
    max: 10,
    onStatement: () => {
      c.n++;
    },
  });
  return { db, close: () => db.close() };
}

export async function statementsPerLifecycle(): Promise<{ service: number; floor: number }> {
  const c = { n: 0 };
  const svcStore = await newStore('stmt_svc');
  const svc = counted(svcStore, c);
  let service: number;
  try {
    const app = inProcessApp(svc.db);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await app.fetch(
        new Request(`http://bench${path}`, {
          method,
          headers: body ? { 'content-type': 'application/json' } : {},
          body: body ? JSON.stringify(body) : undefined,
        }),
        { ip: '127.0.0.1' },
      );
      if (res.status >= 300) throw new Error(`statement count: ${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<any>;
    };
    const payer = (await call('POST', '/v1/agents', { label: 'payer' })).id;
    const payee = (await call('POST', '/v1/agents', { label: 'payee' })).id;
    const one = async () => {
      const e = await call('POST', '/v1/escrows', {
        amount: '25.50',
        asset: 'USDC',
        payerAgentId: payer,
        payeeAgentId: payee,
        terms: TERMS,
      });
      await call('POST', `/v1/escrows/${e.id}/fund`);
      const d = await call('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee, payload: { title: 'Q3 summary' } });
      if (!d.proof) throw new Error('statement count: no proof');
    };
    await one(); // warm: the issuer key cached, the integrator's tip known
    c.n = 0;
    for (let i = 0; i < LIFECYCLES; i++) await one();
    service = c.n / LIFECYCLES;
  } finally {
    await svc.close();
    await svcStore.close();
  }
  const floorStore = await newStore('stmt_floor');
  const fl = counted(floorStore, c);
  try {
    const floor = await floorLifecycle(fl.db);
    c.n = 0;
    const r = await floor.run(1, 0.5);
    return { service, floor: c.n / Math.max(1, r.lifecycles) };
  } finally {
    await fl.close();
    await floorStore.close();
  }
}
