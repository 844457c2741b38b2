import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, PG_URL, twoInstances, type Harness } from '../harness.ts';
import { agent, failedDelivery, funded, PASSING_TERMS } from '../fixtures.ts';
import { sweepOnce, SWEEP_BATCH } from '../../src/jobs/sweep.ts';
import type { CustodyAdapter } from '../../src/custody/simulated.ts';
import { createSimulatedCustody } from '../../src/custody/simulated.ts';
import { createApp } from '../../src/app.ts';

const advance = (h: Harness, s: number) => h.req('POST', '/v1/sandbox/clock', { advanceSeconds: s });
const names = async (h: Harness, id: string) => (await h.req('GET', `/v1/escrows/${id}/events`)).body.events.map((x: any) => x.event);

describeStores('deadline sweep', (h) => {
  test('the sandbox clock moves now forward and deadlines follow it', async () => {
    const before = Date.now();
    const r = await advance(h(), 3600);
    assert.equal(r.status, 200);
    assert.ok(Date.parse(r.body.now) >= before + 3600_000);
    const e = await funded(h(), { timeouts: { deliverWithinSeconds: 60 } });
    assert.ok(Date.parse(e.escrow.updatedAt) >= before + 3600_000, 'timestamps follow the shifted clock');
  });

  test('each expiring stage closes in a proof with escrow.timeout first (deliver, resolve, decide with each ruling)', async () => {
    const deliver = await funded(h(), { timeouts: { deliverWithinSeconds: 60 } });
    const resolve = await failedDelivery(h(), { timeouts: { resolveWithinSeconds: 60 } });
    const decide = {} as Record<string, any>;
    for (const ruling of ['refund', 'release', 'split'] as const) {
      const d = await failedDelivery(h(), { amount: '1.000001', timeouts: { decideWithinSeconds: 60, timeoutRuling: ruling } });
      await h().req('POST', `/v1/escrows/${d.id}/dispute`, { agentId: d.payer.id });
      decide[ruling] = d;
    }
    const untouched = await funded(h(), { timeouts: { deliverWithinSeconds: 100_000 } });
    assert.equal((await sweepOnce(h().app.svc)).closed, 0, 'nothing is due before the deadline');
    await advance(h(), 61);
    let r = await sweepOnce(h().app.svc);
    while (r.closed === 100) r = await sweepOnce(h().app.svc);

    const p1 = (await h().req('GET', `/v1/escrows/${deliver.id}/proof`)).body;
    assert.equal(p1.outcome, 'refunded');
    assert.equal((await h().req('GET', `/v1/escrows/${deliver.id}`)).body.state, 'refunded');
    assert.deepEqual((await names(h(), deliver.id)).slice(-2), ['escrow.timeout', 'proof.issued']);
    const t1 = (await h().req('GET', `/v1/escrows/${deliver.id}/events`)).body.events.at(-2).data;
    assert.deepEqual(t1, { stage: 'deliver', outcome: 'refunded' });

    assert.equal((await h().req('GET', `/v1/escrows/${resolve.id}/proof`)).body.outcome, 'refunded');
    assert.equal((await h().req('GET', `/v1/escrows/${resolve.id}/events`)).body.events.at(-2).data.stage, 'resolve');

    const expected = { refund: 'refunded', release: 'released', split: 'split' } as const;
    for (const ruling of ['refund', 'release', 'split'] as const) {
      const id = decide[ruling].id;
      const proof = (await h().req('GET', `/v1/escrows/${id}/proof`)).body;
      assert.equal(proof.outcome, expected[ruling]);
      assert.equal((await h().req('GET', `/v1/escrows/${id}`)).body.state, 'resolved');
      assert.deepEqual((await names(h(), id)).slice(-3), ['escrow.timeout', 'dispute.resolved', 'proof.issued']);
      const dispute = (await h().req('GET', `/v1/escrows/${id}/dispute`)).body;
      assert.equal(dispute.state, 'resolved');
      assert.equal(dispute.ruling.decidedBy, 'timeout');
      assert.equal(dispute.ruling.outcome, ruling);
      if (ruling === 'split') {
        assert.deepEqual(proof.shares, { payerBps: 5000, payeeBps: 5000 });
        const c = (await h().req('GET', `/v1/escrows/${id}/custody`)).body;
        assert.deepEqual([c.payerAmount, c.payeeAmount], ['0.500001', '0.5']);
      }
    }
    assert.equal((await h().req('GET', `/v1/escrows/${untouched.id}`)).body.state, 'funded');
    // A second sweep finds nothing left: each closed exactly once.
    assert.equal((await sweepOnce(h().app.svc)).closed, 0);
  });

  test('a pass closes at most SWEEP_BATCH escrows, fewer than Postgres caches subtransactions for (64), and the next pass the rest', async () => {
    assert.ok(SWEEP_BATCH <= 64, `each closing is a savepoint: ${SWEEP_BATCH} per pass would overflow the 64 cached subtransactions`);
    const e = await funded(h(), { timeouts: { deliverWithinSeconds: 60 } });
    // The same payer and payee for the rest, created straight through the API.
    for (let i = 0; i < SWEEP_BATCH + 4; i++) {
      const c = await h().req('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: e.payer.id,
        payeeAgentId: e.payee.id,
        timeouts: { deliverWithinSeconds: 60 },
      });
      assert.equal(c.status, 201, c.text);
      assert.equal((await h().req('POST', `/v1/escrows/${c.body.id}/fund`)).status, 200);
    }
    await advance(h(), 61);
    const first = await sweepOnce(h().app.svc);
    assert.equal(first.closed, SWEEP_BATCH);
    const second = await sweepOnce(h().app.svc);
    assert.equal(second.closed, 5);
    assert.equal((await sweepOnce(h().app.svc)).closed, 0);
  });

  test('the leaves of one pass are integrated in one batch: one signed head for all of them', async () => {
    for (let i = 0; i < 5; i++) await funded(h(), { timeouts: { deliverWithinSeconds: 60 } });
    await advance(h(), 61);
    await h().app.svc.proofLog.drain();
    const [{ before }] = await h().db.query<{ before: number }>('SELECT coalesce(max(size), 0)::int AS before FROM log_heads');
    assert.equal((await sweepOnce(h().app.svc)).closed, 5);
    // The pass's commit hands over its five leaves one after-commit hook each; the integrator starts
    // its batch only once all of them are handed over (not with the first, leaving four for a second).
    const heads = await h().db.query<{ size: number }>('SELECT size::int AS size FROM log_heads WHERE size > $1 ORDER BY size', [before]);
    assert.deepEqual(
      heads.map((x) => x.size),
      [before + 5],
    );
  });

  test('a timeout that custody cannot settle is journaled and waits for the retry route', async () => {
    const e = await funded(h(), { timeouts: { deliverWithinSeconds: 30 } });
    await advance(h(), 31);
    await h().req('POST', '/v1/sandbox/custody/fail-next', { count: 1 });
    let r = await sweepOnce(h().app.svc);
    while (r.closed === 100) r = await sweepOnce(h().app.svc);
    const esc = (await h().req('GET', `/v1/escrows/${e.id}`)).body;
    assert.equal(esc.state, 'funded');
    assert.equal(esc.custody.status, 'settle-failed');
    assert.equal(esc.deadlineAt, undefined);
    assert.equal((await sweepOnce(h().app.svc)).failed, 0, 'the sweep leaves a failed entry alone');
    const p = await h().req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(p.body.outcome, 'refunded');
    assert.deepEqual((await names(h(), e.id)).slice(-3), ['custody.failed', 'escrow.timeout', 'proof.issued']);
  });

  test('a fault in the middle of a sweep batch leaves that escrow exactly as it was and closes the others', async () => {
    // A custody adapter that throws (as a crash would) on its second call.
    let calls = 0;
    const sim = createSimulatedCustody();
    const flaky: CustodyAdapter = {
      kind: 'flaky',
      async settle(tx, req) {
        if (++calls === 2) throw new Error('boom');
        return sim.settle(tx, req);
      },
    };
    const app = createApp({ db: h().db, config: h().config, custody: flaky });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await funded(h(), { timeouts: { deliverWithinSeconds: 10 } })).id);
    await advance(h(), 11);
    const errors: string[] = [];
    let r = await sweepOnce(app.svc, { onError: (id) => errors.push(id) });
    while (r.closed + r.errors === 100) r = await sweepOnce(app.svc, { onError: (id) => errors.push(id) });
    assert.equal(errors.length, 1);
    const broken = errors[0];
    const esc = (await h().req('GET', `/v1/escrows/${broken}`)).body;
    assert.equal(esc.state, 'funded');
    assert.equal(esc.custody.status, 'locked');
    assert.deepEqual(await names(h(), broken), ['escrow.created', 'escrow.funded']);
    const [{ n }] = await h().db.query('SELECT count(*)::int AS n FROM custody WHERE escrow_id = $1', [broken]);
    assert.equal(n, 0);
    const [{ size }] = await h().db.query('SELECT size::int AS size FROM log_state');
    const [{ proofs }] = await h().db.query('SELECT count(*)::int AS proofs FROM proofs');
    assert.equal(size, proofs, 'the log holds exactly one leaf per proof');
    // The next pass closes it.
    await sweepOnce(app.svc);
    assert.equal((await h().req('GET', `/v1/escrows/${broken}`)).body.state, 'refunded');
  });
});

describeStores('sweep pass: proofs signed ahead', (h) => {
  test('a proof signed ahead for a closing whose custody then fails or throws is never stored; the rest of the pass closes', async () => {
    // Simulated rails (so the pass signs each next closing while the previous one's statements
    // travel) that decline the 2nd settlement and throw on the 3rd.
    let calls = 0;
    const sim = createSimulatedCustody();
    const odd: CustodyAdapter = {
      kind: 'simulated',
      async settle(tx, req) {
        calls++;
        if (calls === 2) return { ok: false, error: 'declined by the test' };
        if (calls === 3) throw new Error('boom');
        return sim.settle(tx, req);
      },
    };
    const app = createApp({ db: h().db, config: h().config, custody: odd });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await funded(h(), { timeouts: { deliverWithinSeconds: 10 + i } })).id);
    await advance(h(), 20);
    const errors: string[] = [];
    const r = await sweepOnce(app.svc, { onError: (id) => errors.push(id) });
    assert.deepEqual([r.closed, r.failed, r.errors], [2, 1, 1]);
    await app.svc.proofLog.drain();
    const states = [];
    for (const id of ids) states.push((await h().req('GET', `/v1/escrows/${id}`)).body);
    assert.deepEqual(
      states.map((e) => [e.state, e.custody.status]),
      [
        ['refunded', 'settled'],
        ['funded', 'settle-failed'],
        ['funded', 'locked'],
        ['refunded', 'settled'],
      ],
    );
    assert.deepEqual(errors, [ids[2]]);
    const proofs = await h().db.query<{ escrow_id: string }>('SELECT escrow_id FROM proofs ORDER BY escrow_id');
    assert.deepEqual(proofs.map((p) => p.escrow_id).sort(), [ids[0], ids[3]].sort(), 'only the closed escrows have proofs');
    const [{ size }] = await h().db.query('SELECT size::int AS size FROM log_state');
    assert.equal(size, 2, 'one leaf per stored proof');
    for (const id of [ids[0], ids[3]]) {
      const events = (await h().req('GET', `/v1/escrows/${id}/events`)).body.events;
      const proof = (await h().req('GET', `/v1/escrows/${id}/proof`)).body;
      assert.deepEqual(
        events.slice(-2).map((x: any) => x.event),
        ['escrow.timeout', 'proof.issued'],
      );
      assert.equal(proof.trailLength, events.length - 1, 'the proof commits to the trail up to escrow.timeout');
      const v = await h().req('POST', '/v1/verify', proof);
      assert.equal(v.body.valid, true, JSON.stringify(v.body));
    }
    assert.deepEqual(await names(h(), ids[1]), ['escrow.created', 'escrow.funded', 'custody.failed']);
  });
});

test('two instances sweeping one Postgres close each escrow exactly once (20 rounds)', {
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const { a, b, db, close } = await twoInstances('sweep');
  try {
    const payer = await agent(a);
    const payee = await agent(a);
    let total = 0;
    for (let round = 0; round < 20; round++) {
      const ids: string[] = [];
      for (let i = 0; i < 15; i++) {
        const e = (
          await a.req('POST', '/v1/escrows', {
            amount: '1',
            asset: 'USDC',
            terms: PASSING_TERMS,
            payerAgentId: payer.id,
            payeeAgentId: payee.id,
            timeouts: { deliverWithinSeconds: 5 },
          })
        ).body;
        await a.req('POST', `/v1/escrows/${e.id}/fund`);
        ids.push(e.id);
      }
      await a.req('POST', '/v1/sandbox/clock', { advanceSeconds: 6 });
      // Both instances sweep at once, repeatedly, with small batches so they interleave.
      // A pass that loses the advisory-lock race skips (ran: false); each keeps going until a pass it
      // ran finds nothing due.
      const runs = await Promise.all(
        [a, b].map(async (h) => {
          let ran = 0;
          const until = Date.now() + 60_000;
          while (Date.now() < until) {
            const r = await sweepOnce(h.app.svc, { batch: 4 });
            if (r.ran) ran++;
            if (r.ran && r.closed + r.failed + r.errors === 0) break;
            // Lost the lock race: the other instance is sweeping; try again shortly.
            if (!r.ran) await new Promise((res) => setTimeout(res, 2));
          }
          return ran;
        }),
      );
      assert.ok(runs[0] > 0 && runs[1] > 0, `both instances ran passes: ${runs}`);
      total += ids.length;
      const rows = await db.query(
        `SELECT e.state, count(p.id)::int AS proofs FROM escrows e LEFT JOIN proofs p ON p.escrow_id = e.id WHERE e.id = ANY($1::text[]) GROUP BY e.id, e.state`,
        [ids],
      );
      assert.equal(rows.length, ids.length);
      for (const r of rows) {
        assert.equal(r.state, 'refunded', `round ${round}: an escrow left ${r.state}`);
        assert.equal(r.proofs, 1, `round ${round}: ${r.proofs} proofs for one escrow`);
      }
    }
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM trail_entries WHERE event = 'escrow.timeout'`);
    assert.equal(n, total);
    const [{ size }] = await db.query('SELECT size::int AS size FROM log_state');
    assert.equal(size, total);
  } finally {
    await close();
  }
});
