// x402 facilitator across crashes: the real service is SIGKILLed between a collect and its capture,
// while a collect runs, and after a capture or void committed but before its answer left (the
// answer's first byte is the signal: the transaction has committed by then). After each restart the
// repeated call answers what the first did, and every payment is one escrow in one state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, TSX, type Proc } from '../process/proc.ts';
import { PG_URL } from '../harness.ts';
import { generateKeys, type Terms } from '@escrow-settlement/client';
import { signCapture, signCollect, signVoid } from '@escrow-settlement/client/x402/authCapture';
import { caller, counts, ok, pgSchema, report, sleep, type Call } from './lib.ts';

const TERMS: Terms = { description: 'a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const SETTLE = '/v1/x402/facilitator/settle';

/** Sends `body` and SIGKILLs the service as soon as the answer starts (or after `afterMs`): the caller never reads it. */
function killDuring(proc: Proc, path: string, body: unknown, afterMs?: number): Promise<void> {
  const u = new URL(proc.url);
  const text = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: Number(u.port),
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) },
      },
      (res) => {
        proc.child.kill('SIGKILL');
        res.resume();
      },
    );
    req.on('error', () => {});
    req.end(text);
    if (afterMs !== undefined) setTimeout(() => proc.child.kill('SIGKILL'), afterMs);
    void proc.exited.then(() => resolve());
  });
}

async function x402Run(store: 'pglite' | 'postgres') {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-x402-'));
  const pg = store === 'postgres' ? await pgSchema('x402') : undefined;
  const env: Record<string, string> = { DATA_DIR: dir, ...(pg ? { DATABASE_URL: pg.url } : {}) };
  const procs: Proc[] = [];
  let proc: Proc;
  let call: Call;
  const restart = async () => {
    await proc.exited;
    counts.kills++;
    proc = await startService(TSX, env, 90_000);
    procs.push(proc);
    counts.restarts++;
    call = caller(proc.url);
  };
  const payee = generateKeys();
  const requirements = {
    scheme: 'auth-capture',
    network: 'escrow:sandbox',
    asset: 'USDC',
    amount: '25000',
    payTo: payee.publicKey,
    maxTimeoutSeconds: 600,
    extra: { paymentFlow: 'escrow', terms: TERMS },
  };
  const resource = { url: 'https://shop.example/report' };
  const request = (payload: unknown) => ({
    x402Version: 2,
    paymentPayload: { x402Version: 2, resource, accepted: requirements, payload },
    paymentRequirements: requirements,
  });
  const lines: string[] = [];
  try {
    proc = await startService(TSX, env, 90_000);
    procs.push(proc);
    call = caller(proc.url);
    // Each payment dies at another point of its collect, then at its capture or void.
    const plans = [
      { collectKill: 'after-answer', delivery: { title: 'ok' }, end: 'capture', state: 'settled' },
      { collectKill: 'on-answer', delivery: { nope: 1 }, end: 'capture', state: 'delivered' },
      { collectKill: 'mid-flight', delivery: undefined, end: 'void', state: 'refunded' },
      { collectKill: 'mid-flight', delivery: { title: 'late' }, end: 'capture', state: 'settled' },
    ] as const;
    const payments: Array<{ escrowId: string; state: string }> = [];
    for (const [i, plan] of plans.entries()) {
      const payer = generateKeys();
      const collect = request(
        signCollect(payer.secretKey, {
          to: payee.publicKey,
          value: requirements.amount,
          asset: 'USDC',
          resource: resource.url,
          terms: TERMS,
          maxTimeoutSeconds: 600,
        }),
      );
      if (plan.collectKill === 'after-answer') {
        assert.equal((await call('POST', SETTLE, collect)).body.success, true);
        proc.child.kill('SIGKILL');
      } else {
        await killDuring(proc, SETTLE, collect, plan.collectKill === 'mid-flight' ? Math.floor(Math.random() * 40) : undefined);
      }
      await restart();
      const first = (await call('POST', SETTLE, collect)).body;
      assert.equal(first.success, true, JSON.stringify(first));
      assert.deepEqual((await call('POST', SETTLE, collect)).body, first, 'a repeated collect answers what the first did');
      const escrowId = first.transaction as string;
      assert.equal((await ok(call, 'GET', `/v1/escrows/${escrowId}`)).state, 'funded');

      const end = request(
        plan.end === 'capture'
          ? signCapture(payee.secretKey, { escrowId, payload: plan.delivery })
          : signVoid(payee.secretKey, { escrowId }),
      );
      await killDuring(proc, SETTLE, end);
      await restart();
      const answer = (await call('POST', SETTLE, end)).body;
      const again = (await call('POST', SETTLE, end)).body;
      assert.deepEqual(again, answer, 'a repeated capture or void answers what the first did');
      if (plan.state === 'delivered') assert.equal(answer.errorReason, 'verdict_failed', JSON.stringify(answer));
      else assert.equal(answer.success, true, JSON.stringify(answer));
      assert.equal((await ok(call, 'GET', `/v1/escrows/${escrowId}`)).state, plan.state);
      payments.push({ escrowId, state: plan.state });
      lines.push(`payment ${i + 1}: collect killed ${plan.collectKill}, ${plan.end} killed on its answer: ${escrowId} ${plan.state}`);
    }
    // Every payment is exactly one escrow, in the state its story ends in, and nothing else exists.
    const { escrows } = await ok(call, 'GET', '/v1/escrows');
    assert.deepEqual(escrows.map((e: any) => `${e.id} ${e.state}`).sort(), payments.map((p) => `${p.escrowId} ${p.state}`).sort());
    assert.equal(await proc.stop('SIGTERM'), 0, proc.stderr());
    counts.escrows += payments.length;
    process.stdout.write(`# ${store}: ${lines.join('\n# ')}\n`);
  } finally {
    report(`x402 facilitator crashes [${store}]`);
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
    await sleep(0);
  }
}

test('x402 facilitator on PGlite: SIGKILLs around collect, capture and void leave one escrow per payment', { timeout: 360_000 }, () =>
  x402Run('pglite'),
);

test(
  'x402 facilitator on Postgres: SIGKILLs around collect, capture and void leave one escrow per payment',
  { timeout: 360_000, skip: !PG_URL && 'needs TEST_DATABASE_URL' },
  () => x402Run('postgres'),
);
