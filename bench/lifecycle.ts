// Run 1: create → fund → deliver (passing, returns a proof) over HTTP, against its floor: the same SQL
// transactions issued straight to the database with fixed precomputed values (no HTTP, no crypto).
import type { Db, Stmt } from '../src/db/types.ts';
import { DEFAULT_TIMEOUTS } from '../src/escrow/escrows.ts';
import { escrowUpdate, lockEscrow, lockEscrowWith, trailWrite } from '../src/escrow/escrowRow.ts';
import { createSimulatedCustody } from '../src/custody/simulated.ts';
import { sequenceLeaf } from '../src/tlog/sequence.ts';
import { fuse } from '../src/db/fuse.ts';
import type { TrailEntry } from '@escrow-settlement/protocol/trail/chain';
import { client, dist, expectStatus, runFor, type Client, type Dist } from './lib.ts';

export const STEPS = ['create', 'fund', 'deliver'] as const;
export type Step = (typeof STEPS)[number];

export interface LifecycleRun {
  concurrency: number;
  /** CPU the service process used per lifecycle (ms) and its share of one core over the run. */
  serviceCpu?: { msPerLifecycle: number; coreShare: number };
  /** The machine's CPU per lifecycle (ms, all cores): service process, bench client, the rest (the database). */
  cpuPerLifecycle?: { service: number; client: number; backends: number; database: number; machineCores: number };
  /** Commits and WAL flushes (pg_stat_database / pg_stat_wal, whole database) per lifecycle; Postgres only. */
  database?: { commits: number; walSyncs: number; walWrites: number };
  lifecycles: number;
  elapsedMs: number;
  perSecond: number;
  steps: Record<Step, Dist>;
}

export const TERMS = { description: 'a summary with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
export const PAYLOAD = { title: 'Q3 summary' };

type Lifecycle = (w: number, record: (step: Step, ms: number) => void) => Promise<void>;

async function measure(concurrency: number, seconds: number, one: Lifecycle): Promise<LifecycleRun> {
  const lat: Record<Step, number[]> = { create: [], fund: [], deliver: [] };
  let lifecycles = 0;
  const elapsedMs = await runFor(concurrency, seconds, async (w, until) => {
    while (performance.now() < until) {
      await one(w, (step, ms) => lat[step].push(ms));
      lifecycles++;
    }
  });
  return {
    concurrency,
    lifecycles,
    elapsedMs,
    perSecond: (lifecycles * 1000) / elapsedMs,
    steps: { create: dist(lat.create), fund: dist(lat.fund), deliver: dist(lat.deliver) },
  };
}

// ---------------------------------------------------------------------------------------------
// The service, over HTTP

export interface HttpLifecycle {
  run(concurrency: number, seconds: number): Promise<LifecycleRun>;
  /** The last proof a delivery returned (POST /v1/verify's document). */
  lastProof(): any;
}

/** One escrow through the service over HTTP; `onStep` hears each step's completion (webhooks bench). */
export async function httpLifecycle(
  c: Client,
  agents: { payer: string; payee: string },
  record: (step: Step, ms: number) => void,
  onStep?: (escrowId: string, step: Step, at: number) => void,
): Promise<any> {
  let t = performance.now();
  const created = expectStatus(
    await c.req('POST', '/v1/escrows', {
      amount: '25.50',
      asset: 'USDC',
      payerAgentId: agents.payer,
      payeeAgentId: agents.payee,
      terms: TERMS,
    }),
    201,
    'POST /v1/escrows',
  );
  const id = created.json.id as string;
  let t2 = performance.now();
  record('create', t2 - t);
  onStep?.(id, 'create', performance.timeOrigin + t2);
  t = t2;
  expectStatus(await c.req('POST', `/v1/escrows/${id}/fund`), 200, 'POST …/fund');
  t2 = performance.now();
  record('fund', t2 - t);
  onStep?.(id, 'fund', performance.timeOrigin + t2);
  t = t2;
  const delivered = expectStatus(
    await c.req('POST', `/v1/escrows/${id}/delivery`, { agentId: agents.payee, payload: PAYLOAD }),
    201,
    'POST …/delivery',
  );
  t2 = performance.now();
  record('deliver', t2 - t);
  onStep?.(id, 'deliver', performance.timeOrigin + t2);
  if (!delivered.json?.proof?.id) throw new Error(`delivery returned no proof: ${delivered.text.slice(0, 300)}`);
  return delivered.json.proof;
}

export async function makeAgents(c: Client): Promise<{ payer: string; payee: string }> {
  const payer = expectStatus(await c.req('POST', '/v1/agents', { label: 'payer' }), 201, 'POST /v1/agents').json.id;
  const payee = expectStatus(await c.req('POST', '/v1/agents', { label: 'payee' }), 201, 'POST /v1/agents').json.id;
  return { payer, payee };
}

/** Against one service process, or several sharing one database (worker w uses process w mod n). */
export async function serviceLifecycle(base: string | string[]): Promise<HttpLifecycle> {
  const bases = Array.isArray(base) ? base : [base];
  const setup = client(bases[0], 1);
  const agents = await makeAgents(setup);
  setup.close();
  let proof: any;
  return {
    async run(concurrency, seconds) {
      const cs = bases.map((b) => client(b, Math.ceil(concurrency / bases.length)));
      try {
        return await measure(concurrency, seconds, async (w, record) => {
          proof = await httpLifecycle(cs[w % cs.length], agents, record);
        });
      } finally {
        for (const c of cs) c.close();
      }
    },
    lastProof: () => proof,
  };
}

// ---------------------------------------------------------------------------------------------
// The floor: the statements the commands issue (src/domain/escrows.ts createEscrow and fundEscrow,
// deliver.ts submitDelivery, close.ts closeMatter), in the same transactions, the same order and the
// same pipelining, with values computed once up front: no HTTP, no hashing, no signing. Where the
// service has a statement helper that does no crypto it is called as is, so the floor follows it
// when it changes: escrowRow.ts lockEscrow / lockEscrowWith / trailWrite / escrowUpdate, custody.ts
// (the simulated adapter's settle), log/sequence.ts sequenceLeaf. The other statement texts are
// copies: keep them in step with src/.
//
// Honest about the log: the floor takes no lock of ours. Its proof row gets its leaf index from a
// plain sequence (nextval) in the closing's own batch, and it runs no integrator: the service's
// integration batches and the closing's wait for them are what the ratio measures, with the rest.

export const hex = (c: string) => c.repeat(64);
const PAYER_KEY = hex('a');
const PAYEE_KEY = hex('b');

const SQL = {
  agentKey: 'SELECT public_key, secret_key FROM agents WHERE id = $1',
  parties: `SELECT svc_now() AS now, (SELECT json_agg(json_build_object('id', id, 'label', label, 'publicKey', public_key))::text
                               FROM agents WHERE id = ANY($1::text[])) AS agents`,
  insertEscrow: `INSERT INTO escrows (id, state, payer, payee, arbiter, payer_key, payee_key, arbiter_key, amount, asset, terms,
                 terms_hash, timeouts, deadline_at, mandate_id, mandate_hash, custody_status, verdict, trail_length, trail_head, created_at, updated_at)
               VALUES ($1, 'created', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, $13, $14, 'unfunded', 'none', 1, $15, $16, $16)`,
  leafSeq: 'CREATE SEQUENCE IF NOT EXISTS floor_leaf_seq MINVALUE 0 START 0',
  delivery:
    'INSERT INTO deliveries (id, escrow_id, content_hash, payload, size_bytes, submitted_at, signature) VALUES ($1, $2, $3, $4, $5, $6, $7)',
  verdict: 'INSERT INTO verdicts (id, escrow_id, delivery_id, passed, results, decided_at) VALUES ($1, $2, $3, $4, $5, $6)',
  journal: `INSERT INTO custody (escrow_id, status, outcome, payer_amount, payee_amount, attempts, last_error, reference, closing, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8, $9, $9)
           ON CONFLICT (escrow_id) DO UPDATE SET status = EXCLUDED.status, attempts = custody.attempts + 1,
             last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at`,
  // The service inserts leaf_index NULL and its integrator fills it; the floor takes a plain sequence.
  proof: `INSERT INTO proofs (id, escrow_id, leaf_index, leaf_hash, doc, issued_at) VALUES ($1, $2, nextval('floor_leaf_seq'), $3, $4, $5)`,
  due: 'SELECT id FROM escrows WHERE deadline_at <= svc_now() ORDER BY deadline_at, id LIMIT $1 FOR UPDATE SKIP LOCKED',
} as const;
export { SQL as FLOOR_SQL };

const CUSTODY = createSimulatedCustody();

// Fixed values, shaped and sized like the service's own.
const AT = '2025-01-01T00:00:00.000Z';
const DEADLINE = new Date('2025-01-02T00:00:00.000Z');
const PAYER = { publicKey: PAYER_KEY, label: 'payer' };
const PAYEE = { publicKey: PAYEE_KEY, label: 'payee' };
const TERMS_JSON = JSON.stringify(TERMS);
const TIMEOUTS_JSON = JSON.stringify(DEFAULT_TIMEOUTS);
const PAYLOAD_JCS = JSON.stringify(PAYLOAD);
const SIGNATURE_JSON = JSON.stringify({ signer: PAYEE_KEY, signature: 'c'.repeat(128) });
const RESULTS_JSON = JSON.stringify([{ check: TERMS.checks[0], passed: true }]);
const CLOSING_JSON = JSON.stringify({ kind: 'release' });

export const ids = (n: number) => {
  const s = String(n).padStart(21, '0');
  return { esc: `esc_floor${s}`, dlv: `dlv_floor${s}`, vrd: `vrd_floor${s}`, prf: `prf_floor${s}` };
};

function escrowJson(id: string, state: string) {
  return {
    id,
    state,
    payer: PAYER,
    payee: PAYEE,
    amount: '25.5',
    asset: 'USDC',
    terms: TERMS,
    timeouts: DEFAULT_TIMEOUTS,
    custody: { status: 'unfunded' },
    createdAt: AT,
    updatedAt: AT,
  };
}

export function entries(from: number, list: Array<{ event: string; body: Record<string, unknown> }>): TrailEntry[] {
  return list.map((e, i) => ({ index: from + i, prevHash: hex('d'), hash: hex('e'), at: AT, event: e.event, body: e.body }));
}

function proofDoc(n: ReturnType<typeof ids>) {
  return JSON.stringify({
    id: n.prf,
    escrowId: n.esc,
    outcome: 'released',
    payer: PAYER_KEY,
    payee: PAYEE_KEY,
    amount: '25.5',
    asset: 'USDC',
    termsHash: hex('1'),
    deliveryHash: hex('2'),
    verdictId: n.vrd,
    trailHead: hex('3'),
    trailLength: 4,
    issuedAt: AT,
    signature: { signer: hex('4'), signature: '5'.repeat(128) },
  });
}

/** closeMatter's confirmed path: the custody call (no statement unless the lock's read saw a sandbox fault pending), then one pipelined batch (with the sequenced leaf). */
export async function floorClose(
  tx: { query: Db['query']; batch: Db['batch'] },
  escrowId: string,
  e: { now: Date; faultPending: boolean },
  opts: {
    n: ReturnType<typeof ids>;
    outcome: 'released' | 'refunded';
    writes: Stmt[];
    trail: TrailEntry[];
    verdict: string;
    payer: string;
    payee: string;
  },
): Promise<void> {
  const now = e.now;
  const settled = await CUSTODY.settle(tx, {
    escrowId,
    reference: `cst_${escrowId.slice(4)}`,
    outcome: opts.outcome,
    payerAmount: BigInt(opts.payer),
    payeeAmount: BigInt(opts.payee),
    asset: 'USDC',
    faultPending: e.faultPending,
  });
  if (!settled.ok) throw new Error(`floor custody: ${settled.error}`);
  const last = opts.trail[opts.trail.length - 1];
  await tx.batch([
    fuse([
      ...opts.writes,
      {
        text: SQL.journal,
        params: [escrowId, 'confirmed', opts.outcome, opts.payer, opts.payee, null, `cst_${escrowId.slice(4)}`, CLOSING_JSON, now],
      },
      trailWrite(escrowId, opts.trail),
      escrowUpdate(escrowId, {
        state: opts.outcome === 'released' ? 'settled' : 'refunded',
        deadlineAt: null,
        custodyStatus: 'settled',
        verdict: opts.verdict,
        trailLength: last.index + 1,
        trailHead: last.hash,
        now,
      }),
      { text: SQL.proof, params: [opts.n.prf, escrowId, hex('8'), proofDoc(opts.n), now] },
      sequenceLeaf(opts.n.prf, hex('8')),
    ]),
  ]);
}

export async function floorLifecycle(db: Db): Promise<{ run(concurrency: number, seconds: number): Promise<LifecycleRun> }> {
  const payerId = 'agt_floorpayer000000000000000';
  const payeeId = 'agt_floorpayee000000000000000';
  for (const [id, key, label] of [
    [payerId, PAYER_KEY, 'payer'],
    [payeeId, PAYEE_KEY, 'payee'],
  ]) {
    await db.query('INSERT INTO agents (id, label, public_key, secret_key, created_at) VALUES ($1, $2, $3, $4, now())', [
      id,
      label,
      key,
      hex('9'),
    ]);
  }
  await db.query(SQL.leafSeq);
  let seq = 0;
  const one: Lifecycle = async (_w, record) => {
    const n = ids(seq++);
    const id = n.esc;
    // create: the parties and the clock (one query, outside the transaction), then the transaction.
    let t = performance.now();
    const [{ now }] = await db.query(SQL.parties, [[payerId, payeeId]]);
    await db.tx(async (tx) => {
      await tx.batch([
        fuse([
          {
            text: SQL.insertEscrow,
            params: [
              id,
              JSON.stringify(PAYER),
              JSON.stringify(PAYEE),
              null,
              PAYER_KEY,
              PAYEE_KEY,
              null,
              '25500000',
              'USDC',
              TERMS_JSON,
              hex('1'),
              TIMEOUTS_JSON,
              null,
              null,
              hex('e'),
              now,
            ],
          },
          trailWrite(id, entries(0, [{ event: 'escrow.created', body: { escrow: escrowJson(id, 'created') } }]), []),
        ]),
      ]);
    });
    let t2 = performance.now();
    record('create', t2 - t);
    t = t2;
    // fund
    await db.tx(async (tx) => {
      const e = await lockEscrow(tx, id);
      await tx.batch([
        fuse([
          trailWrite(id, entries(1, [{ event: 'escrow.funded', body: { deadlineAt: DEADLINE.toISOString() } }])),
          escrowUpdate(id, {
            state: 'funded',
            deadlineAt: DEADLINE,
            custodyStatus: 'locked',
            verdict: 'none',
            trailLength: 2,
            trailHead: hex('e'),
            now: e.now,
          }),
        ]),
      ]);
    });
    t2 = performance.now();
    record('fund', t2 - t);
    t = t2;
    // deliver (sandbox form: the held key is read with the lock), verdict passes, the matter closes
    await db.tx(async (tx) => {
      const { e } = await lockEscrowWith(tx, id, payeeId);
      await floorClose(tx, id, e, {
        n,
        outcome: 'released',
        verdict: 'passed',
        payer: '0',
        payee: '25500000',
        writes: [
          { text: SQL.delivery, params: [n.dlv, id, hex('2'), PAYLOAD_JCS, PAYLOAD_JCS.length, AT, SIGNATURE_JSON] },
          { text: SQL.verdict, params: [n.vrd, id, n.dlv, true, RESULTS_JSON, AT] },
        ],
        trail: entries(2, [
          { event: 'delivery.submitted', body: { deliveryId: n.dlv, contentHash: hex('2') } },
          { event: 'verdict.passed', body: { verdictId: n.vrd, passed: true, failed: [] } },
          { event: 'proof.issued', body: { proofId: n.prf, outcome: 'released' } },
        ]),
      });
    });
    record('deliver', performance.now() - t);
  };
  return { run: (concurrency, seconds) => measure(concurrency, seconds, one) };
}

/**
 * The machine's raw write rate: transactions of one INSERT and one UPDATE (two round trips and a
 * commit, as small as a command can be) at `concurrency`, for `seconds`, through postgres.js.
 */
export async function rawInsertUpdate(db: Db, concurrency: number, seconds: number): Promise<{ perSecond: number; n: number }> {
  await db.query('CREATE TABLE IF NOT EXISTS bench_raw (id bigint PRIMARY KEY, v int NOT NULL)');
  let next = 0;
  let n = 0;
  const elapsedMs = await runFor(concurrency, seconds, async (_w, until) => {
    while (performance.now() < until) {
      const id = next++;
      await db.tx(async (tx) => {
        await tx.query('INSERT INTO bench_raw (id, v) VALUES ($1, 0)', [id]);
        await tx.query('UPDATE bench_raw SET v = v + 1 WHERE id = $1', [id]);
      });
      n++;
    }
  });
  return { perSecond: (n * 1000) / elapsedMs, n };
}
