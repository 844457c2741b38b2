// Idempotency and races through app.fetch: concurrent duplicate creates (one Idempotency-Key),
// funds, deliveries, refunds, rulings, custody retries and x402 replays each have exactly one
// effect, counted in the database (rows, proofs, log leaves, trail events). On PGlite one app; on
// Postgres two apps on two pools in one schema, alternating, as two processes would be.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { makeHarness, STORES, twoInstances, type Harness, type StoreKind } from '../harness.ts';
import { agent, PASSING_TERMS } from '../fixtures.ts';
import { createPaymentHeader, decodePaymentResponse, generateKeys } from '@escrow-settlement/client';
import { counts as x402Counts, offer, pay } from '../x402/helpers.ts';
import { createApp, type AppDeps } from '../../src/app.ts';
import { sweepOnce } from '../../src/jobs/sweep.ts';
import { takeSandboxFault } from '../../src/custody/simulated.ts';
import { counts, report } from './lib.ts';

const N = 10;

async function pair(kind: StoreKind): Promise<{ a: Harness; b: Harness; close: () => Promise<void> }> {
  if (kind === 'pglite') {
    const a = await makeHarness('pglite');
    return { a, b: a, close: () => a.close() };
  }
  return twoInstances('rel_race');
}

for (const kind of STORES) {
  describe(`idempotency and races [${kind}]`, () => {
    let a: Harness;
    let b: Harness;
    let close: () => Promise<void>;
    const on = (i: number) => (i % 2 ? a : b);
    const req: Harness['req'] = async (...args) => {
      const t = performance.now();
      const r = await a.req(...args);
      counts.requests++;
      counts.maxLatencyMs = Math.max(counts.maxLatencyMs, Math.round(performance.now() - t));
      return r;
    };
    /** N concurrent requests, alternating between the two instances. */
    const burst = (n: number, f: (h: Harness, i: number) => Promise<any>) => {
      counts.requests += n;
      return Promise.all(Array.from({ length: n }, (_, i) => f(on(i), i)));
    };
    const one = async <T = number>(sql: string, params: unknown[] = []): Promise<T> => {
      const [r] = await a.db.query(sql, params);
      return Object.values(r)[0] as T;
    };
    const events = (id: string, event: string) =>
      one(`SELECT count(*)::int FROM trail_entries WHERE escrow_id = $1 AND event = $2`, [id, event]);
    const proofsOf = (id: string) => one(`SELECT count(*)::int FROM proofs WHERE escrow_id = $1`, [id]);
    const logMatches = async () =>
      assert.equal(
        await one('SELECT size::int FROM log_state'),
        await one('SELECT count(*)::int FROM proofs'),
        'log size equals the number of proofs',
      );
    const statuses = (rs: { status: number }[]) =>
      rs
        .map((r) => r.status)
        .sort()
        .join(',');
    let parties: { payer: string; payee: string; arbiter: string };
    const create = async (extra: Record<string, unknown> = {}) => {
      const r = await req('POST', '/v1/escrows', {
        amount: '5',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: parties.payer,
        payeeAgentId: parties.payee,
        ...extra,
      });
      assert.equal(r.status, 201, r.text);
      return r.body.id as string;
    };
    const funded = async (extra: Record<string, unknown> = {}) => {
      const id = await create(extra);
      assert.equal((await req('POST', `/v1/escrows/${id}/fund`)).status, 200);
      return id;
    };
    const failed = async (extra: Record<string, unknown> = {}) => {
      const id = await funded(extra);
      const d = await req('POST', `/v1/escrows/${id}/delivery`, { agentId: parties.payee, payload: { body: 'no title' } });
      assert.equal(d.body.verdict.passed, false, d.text);
      return id;
    };

    before(async () => {
      ({ a, b, close } = await pair(kind));
      parties = { payer: (await agent(a, 'payer')).id, payee: (await agent(a, 'payee')).id, arbiter: (await agent(a, 'arbiter')).id };
    });
    after(async () => {
      report(`idempotency and races [${kind}]`);
      await close();
    });

    test('property: N concurrent creates under one Idempotency-Key make one escrow and replay it N-1 times', async () => {
      counts.properties++;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 2, max: N }),
          fc.stringMatching(/^[\x21-\x7e]{1,64}$/),
          fc.integer({ min: 1, max: 999 }),
          async (n, key, amount) => {
            counts.propertyRuns++;
            const k = `${key}-${Math.random()}`; // a fresh key per generated case
            const body = {
              amount: String(amount),
              asset: 'USDC',
              terms: PASSING_TERMS,
              payerAgentId: parties.payer,
              payeeAgentId: parties.payee,
            };
            const rs = await burst(n, (h) => h.req('POST', '/v1/escrows', body, { 'idempotency-key': k }));
            assert.equal(statuses(rs), Array(n).fill(201).join(','), rs.map((r) => r.text).join('\n'));
            assert.equal(new Set(rs.map((r) => r.body.id)).size, 1);
            assert.equal(rs.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, n - 1);
            assert.equal(new Set(rs.map((r) => r.text)).size, 1, 'replays are verbatim');
            assert.equal(await events(rs[0].body.id, 'escrow.created'), 1);
          },
        ),
        { numRuns: 12 },
      );
    });

    test('one Idempotency-Key with different bodies at once: one escrow; the others replay (same body) or 422', async () => {
      const k = `mixed-${Math.random()}`;
      const before = await one('SELECT count(*)::int FROM escrows');
      const rs = await burst(N, (h, i) =>
        h.req(
          'POST',
          '/v1/escrows',
          { amount: String(1 + (i % 3)), asset: 'USDC', terms: PASSING_TERMS, payerAgentId: parties.payer, payeeAgentId: parties.payee },
          { 'idempotency-key': k },
        ),
      );
      assert.ok(
        rs.every((r) => r.status === 201 || (r.status === 422 && r.body.error.code === 'unprocessable')),
        statuses(rs),
      );
      assert.equal(new Set(rs.filter((r) => r.status === 201).map((r) => r.body.id)).size, 1);
      assert.equal(await one('SELECT count(*)::int FROM escrows'), before + 1);
    });

    test('concurrent funds: without a key one 200 and 409s; with one key every answer is the same 200; one escrow.funded each', async () => {
      const x = await create();
      const rs = await burst(N, (h) => h.req('POST', `/v1/escrows/${x}/fund`));
      assert.equal(statuses(rs), ['200', ...Array(N - 1).fill('409')].join(','));
      assert.equal(await events(x, 'escrow.funded'), 1);
      const y = await create();
      const ry = await burst(N, (h) => h.req('POST', `/v1/escrows/${y}/fund`, undefined, { 'idempotency-key': 'fund-once' }));
      assert.equal(statuses(ry), Array(N).fill(200).join(','), ry.map((r) => r.text).join('\n'));
      assert.equal(new Set(ry.map((r) => r.text)).size, 1);
      assert.equal(await events(y, 'escrow.funded'), 1);
    });

    test('concurrent deliveries: one 201 with the proof, the rest 409; one delivery, one proof', async () => {
      const id = await funded();
      const rs = await burst(N, (h) => h.req('POST', `/v1/escrows/${id}/delivery`, { agentId: parties.payee, payload: { title: 'done' } }));
      assert.equal(statuses(rs), ['201', ...Array(N - 1).fill('409')].join(','));
      assert.equal(await one('SELECT count(*)::int FROM deliveries WHERE escrow_id = $1', [id]), 1);
      assert.equal(await proofsOf(id), 1);
      assert.equal(await events(id, 'proof.issued'), 1);
      await logMatches();
    });

    test('concurrent refunds (funded, and after a failed verdict): one 200, the rest 409; one proof, one escrow.refunded', async () => {
      for (const id of [await funded(), await failed()]) {
        const rs = await burst(N, (h) => h.req('POST', `/v1/escrows/${id}/refund`));
        assert.equal(statuses(rs), ['200', ...Array(N - 1).fill('409')].join(','));
        assert.equal(await proofsOf(id), 1);
        assert.equal(await events(id, 'escrow.refunded'), 1);
      }
      await logMatches();
    });

    test('concurrent rulings (co-signed, arbiter, different outcomes): one 200, the rest 409; one proof, one dispute.resolved', async () => {
      const cosigned = await failed();
      const arbitrated = await failed({ arbiterAgentId: parties.arbiter });
      for (const id of [cosigned, arbitrated]) {
        assert.equal((await req('POST', `/v1/escrows/${id}/dispute`, { agentId: parties.payer })).status, 201);
        const rs = await burst(N, (h, i) => {
          const outcome = (['release', 'refund', 'split'] as const)[i % 3];
          return h.req('POST', `/v1/escrows/${id}/dispute/resolve`, {
            outcome,
            ...(outcome === 'split' ? { shares: { payerBps: 2500, payeeBps: 7500 } } : {}),
            agentIds: id === cosigned ? [parties.payer, parties.payee] : [parties.arbiter],
          });
        });
        assert.equal(statuses(rs), ['200', ...Array(N - 1).fill('409')].join(','), rs.map((r) => r.text).join('\n'));
        assert.equal(await proofsOf(id), 1);
        assert.equal(await events(id, 'dispute.resolved'), 1);
      }
      await logMatches();
    });

    test('concurrent custody retries after a failed settlement: every answer is the one proof; custody settled once', async () => {
      const id = await funded();
      assert.equal((await req('POST', '/v1/sandbox/custody/fail-next', { count: 1 })).status, 200);
      assert.equal((await req('POST', `/v1/escrows/${id}/refund`)).status, 502);
      const rs = await burst(N, (h) => h.req('POST', `/v1/escrows/${id}/custody/retry`));
      assert.equal(statuses(rs), Array(N).fill(200).join(','), rs.map((r) => r.text).join('\n'));
      assert.equal(new Set(rs.map((r) => r.body.id)).size, 1, 'every retry answers the same proof');
      assert.equal(await proofsOf(id), 1);
      assert.equal(await events(id, 'proof.issued'), 1);
      const journal = (await req('GET', `/v1/escrows/${id}/custody`)).body;
      assert.equal(journal.status, 'confirmed');
      assert.equal(journal.attempts, 2, 'one failed attempt, one confirmed: never sent again');
      await logMatches();
    });

    test('concurrent x402 replays of one payment: one 200, the rest payment_invalid; one escrow, one nonce, one leaf', async () => {
      const header = createPaymentHeader(await offer(a), generateKeys().secretKey);
      const before = await x402Counts(a);
      const rs = await burst(N, (h) => pay(h, header));
      assert.equal(statuses(rs), ['200', ...Array(N - 1).fill('402')].join(','));
      for (const r of rs.filter((x) => x.status === 402)) assert.equal(r.body.error.code, 'payment_invalid');
      assert.deepEqual(await x402Counts(a), {
        escrows: before.escrows + 1,
        proofs: before.proofs + 1,
        nonces: before.nonces + 1,
        log: before.log + 1,
      });
      const { escrowId } = decodePaymentResponse(rs.find((r) => r.status === 200)!.headers.get('x-payment-response')!);
      assert.equal(await proofsOf(escrowId), 1);
    });

    test('a refund that waited behind a failed delivery signs a proof naming that delivery (lockEscrow stale-join regression)', async () => {
      let both = 0;
      for (let i = 0; i < 16; i++) {
        const id = await funded();
        // The refund starts 0-3 ms after the delivery, so that in most rounds it waits behind it.
        const dp = a.req('POST', `/v1/escrows/${id}/delivery`, { agentId: parties.payee, payload: { n: i } });
        await new Promise((res) => setTimeout(res, i % 4));
        const [d, r] = await Promise.all([dp, b.req('POST', `/v1/escrows/${id}/refund`)]);
        counts.requests += 2;
        if (d.status !== 201 || r.status !== 200) continue;
        both++;
        assert.equal(r.body.deliveryHash, d.body.delivery.contentHash, `proof ${r.body.id} names the delivery made before it`);
        assert.equal(r.body.verdictId, d.body.verdict.id);
      }
      process.stdout.write(`# ${kind}: ${both} of 16 refunds ran after the concurrent delivery\n`);
    });

    test('a sweep batch and a refund of an expired escrow do not deadlock (sweep lock-order regression)', {
      skip: kind === 'pglite' && 'PGlite runs one transaction at a time',
    }, async () => {
      // The refund holds escrow Z's row lock while custody is slow; meanwhile the sweep closes Y
      // (taking the log's sequencer row) and reaches Z. Before the fix the sweep waited for Z while
      // holding the log row, the refund waited for the log row while holding Z: a deadlock, one of
      // them aborted (a 500 to the user, or "sweep could not close an escrow").
      let slowId = '';
      const slow: AppDeps['custody'] = {
        kind: 'slow-for-one',
        async settle(_tx, req) {
          if (req.escrowId === slowId) await new Promise((r) => setTimeout(r, 700));
          return { ok: true, reference: req.reference };
        },
      };
      const refunder = createApp({ db: a.db, config: a.config, custody: slow });
      const y = await funded({ timeouts: { deliverWithinSeconds: 1 } });
      slowId = await funded({ timeouts: { deliverWithinSeconds: 1 } });
      assert.equal((await req('POST', '/v1/sandbox/clock', { advanceSeconds: 5 })).status, 200);
      const refund = refunder.fetch(new Request(`http://test.local/v1/escrows/${slowId}/refund`, { method: 'POST' }), { ip: '127.0.0.1' });
      await new Promise((r) => setTimeout(r, 150));
      const errors: string[] = [];
      const swept = await sweepOnce(b.app.svc, { onError: (id, err) => errors.push(`${id}: ${String(err)}`) });
      const r = await refund;
      counts.requests += 2;
      assert.equal(r.status, 200, await r.text());
      assert.deepEqual(errors, [], 'the sweep closed what it reached');
      assert.equal(swept.errors, 0);
      assert.equal((await req('GET', `/v1/escrows/${y}`)).body.state, 'refunded');
      assert.equal(await proofsOf(slowId), 1);
      await logMatches();
    });

    test('a sweep pass and closings racing for one injected custody fault do not deadlock (fault-row lock regression)', {
      skip: kind === 'pglite' && 'PGlite runs one transaction at a time',
    }, async () => {
      // T1 takes the one fault and holds its row; T2, then the sweep pass (which holds the log row
      // since it closed y1), queue for that row. When T1 commits, T2 locks the row, finds no fault
      // left and, before the fix, kept the row locked (EvalPlanQual) while it went on to wait for the
      // log row; the sweep then waited for T2: a deadlock, the sweep's close of y2 aborted.
      const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
      let pauseFor = '';
      let holdFor = '';
      const sweeping: AppDeps['custody'] = {
        kind: 'pausing',
        async settle(tx, req) {
          if (req.escrowId === pauseFor) await sleep(500);
          return (await takeSandboxFault(tx)) ? { ok: false, error: 'fault' } : { ok: true, reference: req.reference };
        },
      };
      const holding: AppDeps['custody'] = {
        kind: 'holding',
        async settle(tx, req) {
          const fault = await takeSandboxFault(tx);
          if (req.escrowId === holdFor) await sleep(900);
          return fault ? { ok: false, error: 'fault' } : { ok: true, reference: req.reference };
        },
      };
      const sweeper = createApp({ db: b.db, config: b.config, custody: sweeping });
      const t1 = createApp({ db: a.db, config: a.config, custody: holding });
      const y1 = await funded({ timeouts: { deliverWithinSeconds: 1 } });
      const y2 = await funded({ timeouts: { deliverWithinSeconds: 1 } });
      pauseFor = y2;
      holdFor = await funded();
      const other = await funded();
      assert.equal((await req('POST', '/v1/sandbox/clock', { advanceSeconds: 5 })).status, 200);
      const errors: string[] = [];
      const pass = sweepOnce(sweeper.svc, { onError: (id, err) => errors.push(`${id}: ${String(err)}`) }); // t=0: closes y1, pauses 500 ms before y2
      await sleep(100);
      assert.equal((await req('POST', '/v1/sandbox/custody/fail-next', { count: 1 })).status, 200);
      const r1 = t1.fetch(new Request(`http://test.local/v1/escrows/${holdFor}/refund`, { method: 'POST' }), { ip: '127.0.0.1' }); // takes the fault, holds ~900 ms
      await sleep(150);
      const r2 = b.req('POST', `/v1/escrows/${other}/refund`); // queues for the fault row; the sweep queues after it
      const [res1, res2, swept] = await Promise.all([r1, r2, pass]);
      counts.requests += 3;
      assert.equal(res1.status, 502, 'T1 took the fault');
      assert.equal(res2.status, 200, res2.text);
      assert.deepEqual(errors, [], 'the sweep closed what it reached');
      assert.equal(swept.errors, 0);
      for (const id of [y1, y2]) assert.equal((await req('GET', `/v1/escrows/${id}`)).body.state, 'refunded');
      assert.equal((await req('POST', `/v1/escrows/${holdFor}/custody/retry`)).status, 200);
      await logMatches();
    });

    // On Postgres a *database* error inside one close of a sweep pass used to roll back the whole
    // pass: postgres.js records every failed query of a sql.begin() scope and, after the callback
    // returns, rolls back and rethrows, whatever hand-written SAVEPOINTs said. Each close now runs
    // in Tx.savepoint (postgres.js sql.savepoint; PGlite SAVEPOINT statements).
    test('a database error in one close of a sweep pass rolls back that close only; the others of the pass stand', async () => {
      let calls = 0;
      const failing: AppDeps['custody'] = {
        kind: 'db-error-on-second-close',
        async settle(tx, req) {
          if (++calls === 2) await tx.query('SELECT 1 / 0');
          return { ok: true, reference: req.reference };
        },
      };
      const sweeper = createApp({ db: b.db, config: b.config, custody: failing });
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await funded({ timeouts: { deliverWithinSeconds: 1 } }));
      assert.equal((await req('POST', '/v1/sandbox/clock', { advanceSeconds: 5 })).status, 200);
      const errors: string[] = [];
      const r = await sweepOnce(sweeper.svc, { onError: (id) => errors.push(id) });
      assert.equal(errors.length, 1);
      assert.equal(r.closed, 2, 'the other closes of the pass stand');
      for (const id of ids.filter((x) => x !== errors[0])) assert.equal((await req('GET', `/v1/escrows/${id}`)).body.state, 'refunded');
    });

    test('property: any concurrent mix of deliveries, refunds and disputes on one escrow closes it at most once', async () => {
      counts.properties++;
      const op = fc.constantFrom('deliver-pass', 'deliver-fail', 'refund', 'dispute', 'fund', 'retry');
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 2, maxLength: 8 }), fc.boolean(), async (ops, failFirst) => {
          counts.propertyRuns++;
          const id = failFirst ? await failed() : await funded();
          const rs = await burst(ops.length, (h, i) => {
            switch (ops[i]) {
              case 'deliver-pass':
                return h.req('POST', `/v1/escrows/${id}/delivery`, { agentId: parties.payee, payload: { title: 't' } });
              case 'deliver-fail':
                return h.req('POST', `/v1/escrows/${id}/delivery`, { agentId: parties.payee, payload: {} });
              case 'refund':
                return h.req('POST', `/v1/escrows/${id}/refund`);
              case 'dispute':
                return h.req('POST', `/v1/escrows/${id}/dispute`, { agentId: parties.payer });
              case 'fund':
                return h.req('POST', `/v1/escrows/${id}/fund`);
              default:
                return h.req('POST', `/v1/escrows/${id}/custody/retry`);
            }
          });
          for (const r of rs) assert.ok(r.status < 500, `${r.status} ${r.text}`);
          const e = (await req('GET', `/v1/escrows/${id}`)).body;
          const closed = ['settled', 'refunded', 'resolved'].includes(e.state);
          assert.equal(await proofsOf(id), closed ? 1 : 0, `${e.state}: ${statuses(rs)}`);
          assert.equal(await events(id, 'proof.issued'), closed ? 1 : 0);
          assert.ok((await one('SELECT count(*)::int FROM deliveries WHERE escrow_id = $1', [id])) <= 1);
          assert.ok((await one('SELECT count(*)::int FROM disputes WHERE escrow_id = $1', [id])) <= 1);
          if (closed) {
            // The proof describes what happened before it: the delivery and dispute that exist, and no other.
            const [row] = await a.db.query<{ doc: string; delivery: string | null; verdict: string | null; dispute: string | null }>(
              `SELECT p.doc, d.content_hash AS delivery, v.id AS verdict, ds.id AS dispute FROM proofs p
                 LEFT JOIN deliveries d ON d.escrow_id = p.escrow_id LEFT JOIN verdicts v ON v.escrow_id = p.escrow_id
                 LEFT JOIN disputes ds ON ds.escrow_id = p.escrow_id WHERE p.escrow_id = $1`,
              [id],
            );
            const proof = JSON.parse(row.doc);
            assert.equal(proof.deliveryHash ?? null, row.delivery, `proof.deliveryHash after ${ops.join(',')}: ${statuses(rs)}`);
            assert.equal(proof.verdictId ?? null, row.verdict, 'proof.verdictId');
            assert.equal(proof.disputeId ?? null, row.dispute, 'proof.disputeId');
          }
          assert.equal((await req('GET', `/v1/escrows/${id}/trail`)).body.intactUpTo, null);
        }),
        { numRuns: 15 },
      );
      await logMatches();
    });
  });
}
