// The whole auth-capture flow with unmodified @x402/core: x402Client's fetch wrapper pays, an
// x402HTTPResourceServer in front of real routes collects, captures and voids through
// HTTPFacilitatorClient pointed at the service, on PGlite and (with TEST_DATABASE_URL) Postgres.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { wrapFetchWithPayment } from '@x402/fetch';
import { generateKeys, type Terms } from '@escrow-settlement/client';
import { AuthCaptureClient, AuthCaptureServer } from '@escrow-settlement/client/x402/authCapture';
import { STORES } from '../harness.ts';
import { startResourceServer, startService, type ResourceServer, type Service } from './facilitatorServers.ts';

const TERMS: Terms = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const BIN = join(import.meta.dirname, '../../packages/client/dist/bin.js');

async function rows(db: Service['db']) {
  const [r] = await db.query(
    `SELECT (SELECT count(*) FROM escrows)::int AS escrows, (SELECT count(*) FROM x402_payments)::int AS payments, (SELECT count(*) FROM proofs)::int AS proofs`,
  );
  return r as { escrows: number; payments: number; proofs: number };
}

for (const kind of STORES) {
  describe(`x402 facilitator with @x402/core [${kind}]`, () => {
    let svc: Service;
    let rs: ResourceServer;
    const payee = generateKeys();
    const payer = generateKeys();
    const paying = () => wrapFetchWithPayment(fetch, new x402Client().register('escrow:*', new AuthCaptureClient(payer.secretKey)));

    before(async () => {
      svc = await startService(kind);
      const scheme = new AuthCaptureServer({ payeeSecretKey: payee.secretKey, terms: TERMS });
      const option = scheme.option({ price: '$0.01', maxTimeoutSeconds: 120 });
      rs = await startResourceServer({
        facilitator: new HTTPFacilitatorClient({ url: `${svc.url}/v1/x402/facilitator` }),
        scheme,
        routes: {
          'GET /report': { accepts: option, description: 'a report' },
          'GET /untitled': { accepts: option },
          'GET /broken': { accepts: option },
        },
        handlers: {
          '/report': async () => ({ title: 'Q3', body: 'numbers' }),
          '/untitled': async () => ({ body: 'no title' }),
          '/broken': async () => {
            throw new Error('the handler failed');
          },
        },
      });
    });
    after(async () => {
      await rs?.close();
      await svc?.close();
    });

    test('a passing response is captured: the payer gets PAYMENT-RESPONSE naming the proof, whose bundle verifies offline with the CLI', async () => {
      const before = await rows(svc.db);
      const res = await paying()(`${rs.url}/report`);
      assert.equal(res.status, 200, await res.clone().text());
      assert.deepEqual(await res.json(), { title: 'Q3', body: 'numbers' });
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
      assert.equal(settled.success, true);
      assert.match(settled.transaction, /^prf_/);
      assert.equal(settled.network, 'escrow:sandbox');
      assert.equal(settled.payer, payer.publicKey);
      const escrowId = settled.extra!.escrowId as string;
      assert.equal(settled.extra!.state, 'settled');
      assert.deepEqual(await rows(svc.db), { escrows: before.escrows + 1, payments: before.payments + 1, proofs: before.proofs + 1 });

      const escrow = await (await fetch(`${svc.url}/v1/escrows/${escrowId}`)).json();
      assert.equal(escrow.state, 'settled');
      assert.equal(escrow.amount, '0.01');
      assert.equal(escrow.payer.publicKey, payer.publicKey);
      assert.equal(escrow.payee.publicKey, payee.publicKey);
      assert.deepEqual(escrow.terms, TERMS);

      const bundle = await (await fetch(`${svc.url}/v1/proofs/${settled.transaction}/bundle`)).json();
      assert.equal(bundle.proof.outcome, 'released');
      const issuer = (await (await fetch(`${svc.url}/.well-known/proof-issuer.json`)).json()).keys[0].publicKey;
      const dir = mkdtempSync(join(tmpdir(), 'x402-bundle-'));
      try {
        writeFileSync(join(dir, 'bundle.json'), JSON.stringify(bundle));
        const cli = spawnSync(process.execPath, [BIN, 'verify', join(dir, 'bundle.json'), '--trusted-key', issuer], { encoding: 'utf8' });
        assert.equal(cli.status, 0, cli.stdout + cli.stderr);
        const other = spawnSync(process.execPath, [BIN, 'verify', join(dir, 'bundle.json'), '--trusted-key', generateKeys().publicKey], {
          encoding: 'utf8',
        });
        assert.notEqual(other.status, 0, 'a bundle checked against another key must not verify');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('part of the hold captured with a fee through a settlement override, part of it refunded later, each step in the status', async () => {
      const platform = generateKeys().publicKey;
      const scheme = new AuthCaptureServer({ payeeSecretKey: payee.secretKey, terms: TERMS, feeBps: 200 });
      const facilitator = new HTTPFacilitatorClient({ url: `${svc.url}/v1/x402/facilitator` });
      const option = scheme.option({
        price: '$0.01',
        minFeeBps: 100,
        maxFeeBps: 300,
        feeRecipient: platform,
        refundDeadline: new Date(Date.now() + 3_600_000),
      });
      const metered = await startResourceServer({
        facilitator,
        scheme,
        routes: { 'GET /metered': { accepts: option } },
        handlers: { '/metered': async () => ({ title: 'two of five pages' }) },
        overrides: { '/metered': { amount: '4000' } },
      });
      try {
        const res = await paying()(`${metered.url}/metered`);
        assert.equal(res.status, 200, await res.clone().text());
        const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
        assert.equal(settled.success, true, JSON.stringify(settled));
        const paymentId = settled.extra!.escrowId as string;
        const proof = await (await fetch(`${svc.url}/v1/proofs/${settled.transaction}`)).json();
        assert.equal(proof.captured, '0.004');
        assert.deepEqual(proof.fee, { bps: 200, recipient: platform, amount: '0.00008' });
        assert.deepEqual(proof.payouts, { payee: '0.00392', payer: '0.006', fee: '0.00008' });
        let status = await (await fetch(`${svc.url}/v1/x402/facilitator/payments/${paymentId}`)).json();
        assert.equal(status.status, 'captured');
        assert.deepEqual(status.amounts, { authorized: '10000', captured: '4000', refunded: '0', fee: '80' });

        // Later, the resource server refunds part of what it was paid, on the requirements it offered.
        const offered = decodePaymentRequiredHeader((await fetch(`${metered.url}/metered`)).headers.get('payment-required')!).accepts[0];
        const refund = await scheme.refund(facilitator, { requirements: offered, paymentId, amount: '1000', reason: 'three pages short' });
        assert.equal(refund.success, true, JSON.stringify(refund));
        assert.match(refund.transaction, /^prf_/);
        assert.deepEqual(refund.extra, { escrowId: paymentId, refundedTotal: '1000' });
        const adjustment = await (await fetch(`${svc.url}/v1/proofs/${refund.transaction}`)).json();
        assert.equal(adjustment.outcome, 'refunded-after-release');
        assert.equal(adjustment.adjusts, settled.transaction);
        status = await (await fetch(`${svc.url}/v1/x402/facilitator/payments/${paymentId}`)).json();
        assert.equal(status.status, 'partially_refunded');
        assert.deepEqual(status.amounts, { authorized: '10000', captured: '4000', refunded: '1000', fee: '80' });
        assert.deepEqual(status.proofs, [settled.transaction, refund.transaction]);
        assert.equal(status.refundDeadline, offered.extra.refundDeadline);
        // More than the rest of the payee's net payout (3920 - 1000) is refused.
        const over = await scheme.refund(facilitator, { requirements: offered, paymentId, amount: '2921' });
        assert.equal(over.success, false);
        assert.equal(over.errorReason, 'invalid_state');
      } finally {
        await metered.close();
      }
    });

    test('a response failing the terms is not captured: verdict_failed, the escrow stays delivered', async () => {
      const res = await paying()(`${rs.url}/untitled`);
      assert.equal(res.status, 402);
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
      assert.equal(settled.success, false);
      assert.equal(settled.errorReason, 'verdict_failed');
      assert.match(settled.transaction, /^esc_/);
      const escrow = await (await fetch(`${svc.url}/v1/escrows/${settled.transaction}`)).json();
      assert.equal(escrow.state, 'delivered');
      const verdict = settled.extra!.verdict as { passed: boolean; results: Array<{ passed: boolean }> };
      assert.equal(verdict.passed, false);
      assert.equal(settled.extra!.escrowId, settled.transaction);
      assert.equal(
        (await fetch(`${svc.url}/v1/escrows/${settled.transaction}/proof`)).status,
        404,
        'no proof: the matter waits for a dispute, refund or timeout',
      );
    });

    test('a handler that throws voids: the escrow is refunded with a proof', async () => {
      const before = await rows(svc.db);
      const res = await paying()(`${rs.url}/broken`);
      assert.equal(res.status, 500);
      const voided = decodePaymentResponseHeader(res.headers.get('payment-response')!);
      assert.equal(voided.success, true, JSON.stringify(voided));
      assert.match(voided.transaction, /^prf_/);
      assert.equal(voided.extra!.state, 'refunded');
      const proof = await (await fetch(`${svc.url}/v1/proofs/${voided.transaction}`)).json();
      assert.equal(proof.outcome, 'refunded');
      assert.equal((await (await fetch(`${svc.url}/v1/escrows/${voided.extra!.escrowId}`)).json()).state, 'refunded');
      assert.deepEqual(await rows(svc.db), { escrows: before.escrows + 1, payments: before.payments + 1, proofs: before.proofs + 1 });
    });

    test('a collect whose answer times out, retried by the payer with the same payment: still one escrow', async () => {
      // The facilitator's answer to the first collect is held past the client's deadline: the
      // service committed, the resource server saw a timeout (an outcome it cannot know).
      const realFetch = globalThis.fetch;
      let held = 0;
      globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
        const res = await realFetch(input, init);
        const isCollect = String(input).endsWith('/facilitator/settle') && !String(init?.body).includes('"type":');
        if (isCollect && held++ === 0) {
          await new Promise((_, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason)));
        }
        return res;
      }) as typeof fetch;
      const scheme = new AuthCaptureServer({ payeeSecretKey: payee.secretKey, terms: TERMS });
      const slow = await startResourceServer({
        facilitator: new HTTPFacilitatorClient({ url: `${svc.url}/v1/x402/facilitator`, timeoutMs: 5000 }),
        scheme,
        routes: { 'GET /report': { accepts: scheme.option({ price: '0.02' }) } },
        handlers: { '/report': async () => ({ title: 'retried' }) },
      });
      try {
        const before = await rows(svc.db);
        let sent: string | undefined;
        const spy = (async (input: RequestInfo | URL, init?: RequestInit) => {
          const fromRequest = typeof input === 'object' && 'headers' in input ? input.headers.get('payment-signature') : null;
          sent = new Headers(init?.headers).get('payment-signature') ?? fromRequest ?? sent;
          return realFetch(input, init);
        }) as typeof fetch;
        const first = await wrapFetchWithPayment(
          spy,
          new x402Client().register('escrow:sandbox', new AuthCaptureClient(payer.secretKey)),
        )(`${slow.url}/report`);
        assert.equal(first.status, 502, "the resource server could not learn the collect's outcome");
        assert.ok(sent, 'the payer sent PAYMENT-SIGNATURE');
        const afterFirst = await rows(svc.db);
        assert.equal(afterFirst.escrows, before.escrows + 1, 'the timed-out collect did create its escrow');

        const retry = await realFetch(`${slow.url}/report`, { headers: { 'payment-signature': sent! } });
        assert.equal(retry.status, 200, await retry.clone().text());
        const settled = decodePaymentResponseHeader(retry.headers.get('payment-response')!);
        assert.equal(settled.success, true);
        assert.deepEqual(await rows(svc.db), { escrows: before.escrows + 1, payments: before.payments + 1, proofs: before.proofs + 1 });
        const nonce = (decodePaymentSignatureHeader(sent!).payload as any).authorization.nonce;
        const [pay] = await svc.db.query('SELECT escrow_id FROM x402_payments WHERE nonce = $1', [nonce]);
        assert.equal(pay.escrow_id, settled.extra!.escrowId);
      } finally {
        globalThis.fetch = realFetch;
        await slow.close();
      }
    });
  });
}
