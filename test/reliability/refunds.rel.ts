// Refunds after release (docs/protocol.md §24.4-§24.7) racing the captures and each other: two started
// processes on one Postgres schema, escrows with and without fees, whole and partial captures (and
// two captures of one escrow at once), many refunds of random amounts by the payee and the arbiter
// sent to either instance while one instance is SIGKILLed and restarted, again and again. Requests
// cut off by a kill are sent again (refunds under their Idempotency-Key). Then: no escrow refunded
// past the payee's net payout, every refund answered 201 is there with its adjustment proof in the
// log, and the bundle of every closed escrow verifies, every adjustments[i] check passing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { PG_URL } from '../harness.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import type { Bundle } from '@escrow-settlement/protocol/types';
import { counts, Disconnected, Hang, leafHashOf, merkleRoot, pgSchema, rawRequest, report, rssMb, sleep, type HttpRes } from './lib.ts';

const KILLS = Number(process.env.RELIABILITY_REFUND_KILLS ?? 8);
const MIN_ESCROWS = Number(process.env.RELIABILITY_REFUND_ESCROWS ?? 80);
const REFUNDS_PER_ESCROW = 8;
const IN_FLIGHT = 10; // escrows worked on at once
const SHORT_WINDOW_S = 60; // the refund window of every fourth escrow; the clock jumps past it mid-run
const TERMS = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const RECIPIENT = 'f'.repeat(64);
const FAILURE_LINES = /"msg":"(request failed|sweep failed|sweep could not close an escrow|adapter error)"|deadlock/i;

const micro = (s: string): bigint => {
  const [i, f = ''] = s.split('.');
  return BigInt(i) * 1_000_000n + BigInt(f.padEnd(6, '0'));
};
const amountOf = (m: bigint): string => {
  const f = (m % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return f ? `${m / 1_000_000n}.${f}` : `${m / 1_000_000n}`;
};
const rnd = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));

test('refunds after release racing captures and each other on two instances, one SIGKILLed and restarted: none over the payout, none lost, every adjustment verifies', {
  timeout: 240_000,
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const t0 = Date.now();
  const pg = await pgSchema('refunds');
  const dirs = [mkdtempSync(join(tmpdir(), 'escrow-rfd-a-')), mkdtempSync(join(tmpdir(), 'escrow-rfd-b-'))];
  const env = (dir: string) => ({ DATA_DIR: dir, DATABASE_URL: pg.url, SWEEP_INTERVAL_MS: '200' });
  const procs: Proc[] = [];
  // The instances answering now (slot 0 and 1); a killed slot is empty until its restart listens.
  const live: (Proc | null)[] = [null, null];
  const stats = {
    escrows: 0,
    partial: 0,
    withFee: 0,
    doubleCapture: 0,
    refundsSent: 0,
    refunds201: 0,
    replayed: 0,
    beforeRelease: 0,
    overRemaining: 0,
    pastDeadline: 0,
    resent: 0,
    deliveryResent409: 0,
    adjustmentsVerified: 0,
  };
  const anomalies: string[] = [];
  let running = true;

  /** One request to a live instance; sent again (to either) when a kill cuts it off or refuses it. */
  async function send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<HttpRes & { resent: number }> {
    let resent = 0;
    const until = Date.now() + 90_000;
    for (;;) {
      const up = live.filter((p): p is Proc => p !== null);
      const p = up[Math.floor(Math.random() * up.length)];
      if (p) {
        try {
          const r = await rawRequest(p.url, method, path, {
            body: body === undefined ? undefined : JSON.stringify(body),
            headers,
            timeoutMs: 20_000,
          });
          return { ...r, resent };
        } catch (e) {
          if (!(e instanceof Disconnected || e instanceof Hang)) throw e;
        }
      }
      if (Date.now() > until) throw new Error(`${method} ${path}: no instance answered for 90 s`);
      resent++;
      stats.resent++;
      await sleep(50);
    }
  }

  const expect = async (method: string, path: string, body: unknown, status: number, headers: Record<string, string> = {}) => {
    const r = await send(method, path, body, headers);
    assert.equal(r.status, status, `${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
    return r.body;
  };

  // Every refund answered 201: escrow → [{refund, proof}].
  const answered = new Map<string, { refund: any; proof: any }[]>();
  const escrowIds: string[] = [];
  let clockJumped = false;
  let parties: { payer: string; payee: string; arbiter: string };

  async function refundOne(id: string, amount: bigint, by: string, delayMs: number, n: number) {
    await sleep(delayMs);
    stats.refundsSent++;
    const key = `rfd-${id}-${n}-${Math.random().toString(36).slice(2)}`;
    const r = await send(
      'POST',
      `/v1/escrows/${id}/refunds`,
      { amount: amountOf(amount), reason: `r${n}`, agentIds: [by] },
      { 'idempotency-key': key },
    );
    if (r.status === 201) {
      stats.refunds201++;
      if (r.headers['idempotent-replayed'] === 'true') stats.replayed++;
      answered.get(id)!.push(r.body);
      if (r.body?.refund?.amount !== amountOf(amount) || r.body?.proof?.outcome !== 'refunded-after-release')
        anomalies.push(`refund of ${id}: 201 with ${r.text.slice(0, 300)}`);
      return;
    }
    const code = r.body?.error?.code;
    const msg: string = r.body?.error?.message ?? '';
    if (r.status === 409 && code === 'invalid_state') {
      if (/in state (funded|delivered)/.test(msg)) stats.beforeRelease++;
      else if (/remains to refund/.test(msg)) stats.overRemaining++;
      else if (/deadline .* has passed/.test(msg)) stats.pastDeadline++;
      else anomalies.push(`refund of ${id}: 409 ${msg}`);
      return;
    }
    anomalies.push(`refund of ${id}: ${r.status} ${r.text.slice(0, 300)}`);
  }

  async function matter(k: number) {
    const amount = BigInt(rnd(1, 40)) * 1_000_000n + BigInt(rnd(0, 3)) * 250_000n;
    const fee = k % 2 === 0 ? { bps: rnd(1, 1500), recipient: RECIPIENT } : undefined;
    const short = k % 4 === 3;
    const e = await expect(
      'POST',
      '/v1/escrows',
      {
        amount: amountOf(amount),
        asset: 'USDC',
        terms: TERMS,
        payerAgentId: parties.payer,
        payeeAgentId: parties.payee,
        arbiterAgentId: parties.arbiter,
        ...(fee ? { fee } : {}),
        ...(short ? { timeouts: { refundWithinSeconds: SHORT_WINDOW_S } } : {}),
      },
      201,
      { 'idempotency-key': `create-${k}-${t0}` },
    );
    const id = e.id as string;
    escrowIds.push(id);
    answered.set(id, []);
    await expect('POST', `/v1/escrows/${id}/fund`, undefined, 200, { 'idempotency-key': `fund-${id}` });
    stats.escrows++;
    if (fee) stats.withFee++;
    // The claims: the whole amount, or part of it; every third escrow gets two captures at once.
    const claim = () => (Math.random() < 0.5 ? undefined : BigInt(rnd(Math.ceil(Number(amount) / 10), Number(amount))));
    const claims = k % 3 === 0 ? [claim(), claim()] : [claim()];
    if (claims.length === 2) stats.doubleCapture++;
    if (claims.some((c) => c !== undefined && c < amount)) stats.partial++;
    const captures = claims.map(async (c) => {
      await sleep(rnd(0, 250));
      const r = await send('POST', `/v1/escrows/${id}/delivery`, {
        agentId: parties.payee,
        payload: { title: `t${k}` },
        ...(c === undefined ? {} : { amount: amountOf(c) }),
      });
      if (r.status === 409 && r.body?.error?.code === 'invalid_state') {
        if (r.resent) stats.deliveryResent409++;
        return r;
      }
      if (r.status !== 201 || r.body?.verdict?.passed !== true || !r.body?.proof)
        anomalies.push(`delivery of ${id}: ${r.status} ${r.text.slice(0, 300)}`);
      return r;
    });
    // Refunds of random amounts (together about twice what the payee could get), by the payee or the
    // arbiter, sent from just before the capture to a second after it.
    const refunds = Array.from({ length: REFUNDS_PER_ESCROW }, (_, n) => {
      const amt = BigInt(rnd(1, Math.max(1, Number(amount / 4n))));
      return refundOne(id, amt, n % 3 === 2 ? parties.arbiter : parties.payee, rnd(0, 1200), n);
    });
    const ds = await Promise.all(captures);
    await Promise.all(refunds);
    const won = ds.filter((r) => r.status === 201).length;
    if (won > 1) anomalies.push(`${id}: ${won} captures answered 201`);
  }

  try {
    procs.push(...(await Promise.all(dirs.map((d) => startService(TSX, env(d), 90_000)))));
    counts.restarts += 2;
    live[0] = procs[0];
    live[1] = procs[1];
    parties = {
      payer: (await expect('POST', '/v1/agents', {}, 201)).id,
      payee: (await expect('POST', '/v1/agents', {}, 201)).id,
      arbiter: (await expect('POST', '/v1/agents', {}, 201)).id,
    };

    // Kills: an instance at random, every 1-3 s, restarted on the same database at once.
    let kills = 0;
    const restartMs: number[] = [];
    const killer = (async () => {
      while (kills < KILLS) {
        await sleep(rnd(1000, 3000));
        const slot = rnd(0, 1);
        const p = live[slot]!;
        rssMb(p.child.pid!);
        p.child.kill('SIGKILL');
        await p.exited;
        live[slot] = null;
        kills++;
        counts.kills++;
        // The clock jumps once, past the short refund windows, while refunds are in flight.
        if (kills === 2 && !clockJumped) {
          await expect('POST', '/v1/sandbox/clock', { advanceSeconds: SHORT_WINDOW_S + 30 }, 200);
          clockJumped = true;
        }
        const t = Date.now();
        const q = await startService(TSX, env(dirs[slot]), 90_000);
        restartMs.push(Date.now() - t);
        counts.restarts++;
        procs.push(q);
        live[slot] = q;
      }
    })();

    // Matters until every kill happened and at least MIN_ESCROWS were worked through.
    let next = 0;
    const worker = async () => {
      while (running && (next < MIN_ESCROWS || kills < KILLS)) await matter(next++);
    };
    await Promise.all([...Array.from({ length: IN_FLIGHT }, worker), killer.then(() => undefined)]);
    running = false;
    const loadMs = Date.now() - t0;

    assert.deepEqual(anomalies, [], 'every capture and refund got an answer its race allows');
    assert.ok(stats.refunds201 > 0 && stats.overRemaining > 0 && stats.beforeRelease > 0, `the races happened: ${JSON.stringify(stats)}`);

    // The log: every proof sequenced, its root a naive RFC 6962 rebuild of its leaves.
    const db = openPostgres(pg.url, { max: 1 });
    let head: any;
    const entries: any[] = [];
    try {
      const [{ proofs }] = await db.query<{ proofs: number }>('SELECT count(*)::int AS proofs FROM proofs');
      const w = Date.now();
      for (;;) {
        head = await expect('GET', '/v1/log/head', undefined, 200);
        if (head.logSize === proofs || Date.now() - w > 20_000) break;
        await sleep(100);
      }
      assert.equal(head.logSize, proofs, 'every proof is a leaf of the log');
      while (entries.length < head.logSize) {
        const page = await expect(
          'GET',
          `/v1/log/entries?start=${entries.length}&end=${Math.min(head.logSize, entries.length + 1000)}`,
          undefined,
          200,
        );
        assert.ok(page.entries.length > 0);
        entries.push(...page.entries);
      }
      assert.equal(
        merkleRoot(entries.map((en) => leafHashOf(en.proof))).toString('hex'),
        head.rootHash,
        'the log root rebuilds from its leaves',
      );
      // In the database: refunds, adjustment proofs and refunded totals agree.
      const [db1] = await db.query<Record<string, number>>(`SELECT
          (SELECT count(*) FROM refunds)::int AS refunds,
          (SELECT count(*) FROM proofs WHERE adjusts IS NOT NULL)::int AS adjustments,
          (SELECT count(*) FROM refunds r LEFT JOIN proofs p ON p.id = r.proof_id WHERE p.id IS NULL)::int AS orphans,
          (SELECT count(*) FROM escrows e WHERE e.refunded <> coalesce((SELECT sum(amount) FROM refunds r WHERE r.escrow_id = e.id), 0))::int AS totals_off`);
      assert.equal(db1.adjustments, db1.refunds, 'one adjustment proof per refund');
      assert.equal(db1.orphans, 0, 'every refund names its adjustment proof');
      assert.equal(db1.totals_off, 0, "every escrow's refunded total is the sum of its refunds");
    } finally {
      await db.close();
    }
    const inLog = new Set(entries.map((en) => en.proof.id));

    // Escrow by escrow: the payout bound and nothing lost, read over HTTP; then each bundle.
    const pinned = (await expect('GET', '/.well-known/proof-issuer.json', undefined, 200)).keys;
    const overRefunded: string[] = [];
    const lost: string[] = [];
    let refundsInDb = 0;
    const closed: { id: string; closing: any; refunds: any[]; sum: bigint; payee: bigint }[] = [];
    for (const id of escrowIds) {
      const view = await expect('GET', `/v1/escrows/${id}`, undefined, 200);
      assert.equal(view.state, 'settled', `${id} settled by its capture`);
      const closing = await expect('GET', `/v1/escrows/${id}/proof`, undefined, 200);
      const payee = micro(closing.payouts.payee);
      const refunds: any[] = view.refunds ?? [];
      refundsInDb += refunds.length;
      const sum = refunds.reduce((s, r) => s + micro(r.amount), 0n);
      if (sum > payee) overRefunded.push(`${id}: refunds ${amountOf(sum)} > payouts.payee ${closing.payouts.payee}`);
      assert.equal(view.refundedTotal, amountOf(sum), `${id}: refundedTotal is the sum of its refunds`);
      const ids = new Set(refunds.map((r) => r.id));
      for (const a of answered.get(id)!)
        if (!ids.has(a.refund.id) || !inLog.has(a.proof.id))
          lost.push(
            `${id}: refund ${a.refund.id} (${ids.has(a.refund.id) ? 'recorded' : 'missing'}), proof ${a.proof.id} (${inLog.has(a.proof.id) ? 'in the log' : 'not in the log'})`,
          );
      closed.push({ id, closing, refunds, sum, payee });
    }
    assert.deepEqual(overRefunded, [], 'no escrow refunded past the payee net payout');
    assert.deepEqual(lost, [], 'every refund answered 201 exists, its adjustment proof in the log');
    for (const { id, closing, refunds, sum, payee } of closed) {
      if (refunds.length === 0) continue;
      const bundle = (await expect('GET', `/v1/proofs/${closing.id}/bundle`, undefined, 200)) as Bundle;
      assert.equal(bundle.proof.id, closing.id);
      const adj = bundle.adjustments ?? [];
      assert.equal(adj.length, refunds.length, `${id}: the bundle carries every refund's adjustment`);
      for (const a of answered.get(id)!)
        assert.ok(
          adj.some((x) => x.proof.id === a.proof.id),
          `${id}: the bundle carries the adjustment ${a.proof.id} answered 201`,
        );
      const v = verifyBundle(bundle, { trustedKeys: pinned });
      const failing = v.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
      assert.deepEqual(failing, [], `${id}: every check of its bundle passes`);
      assert.equal(v.ok, true);
      const adjChecks = v.checks.filter((c) => c.name.startsWith('adjustments['));
      assert.equal(adjChecks.length, adj.length * 7, `${id}: seven checks per adjustment`);
      assert.equal(v.payouts?.payee, amountOf(payee - sum), `${id}: the bundle's net payee payout`);
      stats.adjustmentsVerified += adj.length;
      counts.proofsChecked += 1 + adj.length;
    }
    if (KILLS >= 2) assert.ok(clockJumped, 'the clock jumped past the short refund windows mid-run');

    for (const p of live) if (p) assert.equal(await p.stop('SIGTERM'), 0, p.stderr());
    const logged = procs.flatMap((p) =>
      p
        .stderr()
        .split('\n')
        .filter((l) => FAILURE_LINES.test(l))
        .map((l) => l.slice(0, 400)),
    );
    assert.deepEqual(logged, [], 'no failure logged');
    counts.escrows = Math.max(counts.escrows, stats.escrows);
    process.stdout.write(
      `# refunds after release: ${JSON.stringify({ ...stats, refundsInDb, kills, restartMs, proofs: entries.length, loadMs, totalMs: Date.now() - t0 })}\n`,
    );
  } finally {
    running = false;
    report('refunds after release under kills', { ...stats, wallMs: Date.now() - t0 });
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await pg.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
});
