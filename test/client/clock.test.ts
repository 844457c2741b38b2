// The client signs against the service's clock: the offset of the latest x-service-now it saw (or of
// one read of GET /v1/sandbox/clock), so a sandbox clock moved forward by days does not turn its
// client-signed deliveries and dispute acts into skew refusals (docs/protocol.md §9.4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ApiError, createClient, generateKeys, ServiceClock, signDelivery, type ApiClient } from '@escrow-settlement/client';
import { describeStores } from '../harness.ts';
import { PASSING_TERMS } from '../fixtures.ts';

test('ServiceClock: local time plus the offset of the latest reading; no reading, local time; a non-time is ignored', () => {
  let local = Date.parse('2026-01-01T00:00:00.000Z');
  const c = new ServiceClock(() => local);
  assert.equal(c.offsetMs, null);
  assert.equal(c.nowIso(), '2026-01-01T00:00:00.000Z');
  c.observe('2026-01-04T00:00:00.000Z');
  assert.equal(c.offsetMs, 3 * 86_400_000);
  local += 5000;
  assert.equal(c.nowIso(), '2026-01-04T00:00:05.000Z', 'the offset follows local time on');
  // A reading taken earlier (at) than now counts from when it was taken.
  c.observe('2026-01-05T00:00:00.000Z', local - 1000);
  assert.equal(c.nowIso(), '2026-01-05T00:00:01.000Z');
  // The latest reading wins even when it is behind the one before.
  c.observe('2026-01-01T00:00:05.000Z');
  assert.equal(c.offsetMs, 0);
  for (const bad of ['yesterday', '', null, undefined]) c.observe(bad);
  assert.equal(c.offsetMs, 0, 'a value that is not a time leaves the offset');
});

describeStores('the client signs against the service clock', (h) => {
  const client = (): { api: ApiClient; requests: string[] } => {
    const requests: string[] = [];
    const api = createClient({
      baseUrl: 'http://sandbox.local',
      fetch: async (req) => {
        requests.push(`${req.method} ${new URL(req.url).pathname}`);
        return h().app.fetch(req);
      },
    });
    return { api, requests };
  };
  const funded = async (api: ApiClient, payer: string, payee: string, payload?: unknown) => {
    const e = await api.escrows.create({
      amount: '10',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payer: { publicKey: payer },
      payee: { publicKey: payee },
    } as never);
    await api.escrows.fund(e.id);
    return { id: e.id, payload };
  };

  test('three days ahead: signed deliveries and dispute acts succeed; the local clock alone is refused as skew', async () => {
    const [payer, payee] = [generateKeys(), generateKeys()];
    // Moved by another caller: this client has seen no x-service-now yet.
    assert.equal((await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 3 * 86_400 })).status, 200);
    const { api, requests } = client();
    const first = await funded(api, payer.publicKey, payee.publicKey);
    const local = signDelivery(payee.secretKey, { escrowId: first.id, payload: { title: 'done' } });
    await assert.rejects(api.escrows.deliver(first.id, local), (e: ApiError) => {
      assert.equal(e.status, 422);
      assert.match(e.message, /submittedAt is \d+ s from the service clock/);
      return true;
    });
    // That refusal carried x-service-now: the client now knows the offset without asking.
    assert.ok(Math.abs((api.clock.offsetMs() ?? 0) - 3 * 86_400_000) < 60_000, `offset ${api.clock.offsetMs()}`);
    const settled = await api.escrows.deliver(
      first.id,
      await api.sign.delivery(payee.secretKey, { escrowId: first.id, payload: { title: 'done' } }),
    );
    assert.equal(requests.includes('GET /v1/sandbox/clock'), false, 'the header was enough: no clock read');
    assert.equal(settled.verdict.passed, true);
    assert.ok(settled.proof, 'a passing signed delivery settles');

    // A fresh client that has seen no header reads GET /v1/sandbox/clock once before its first signature.
    const fresh = client();
    const second = await funded(api, payer.publicKey, payee.publicKey);
    const signed = await fresh.api.sign.delivery(payee.secretKey, { escrowId: second.id, payload: { body: 'no title' } });
    assert.deepEqual(fresh.requests, ['GET /v1/sandbox/clock']);
    assert.ok(Date.parse(signed.submittedAt) - Date.now() > 3 * 86_400_000 - 60_000, signed.submittedAt);
    await fresh.api.escrows.deliver(second.id, signed);
    const opened = await fresh.api.disputes.open(
      second.id,
      await fresh.api.sign.disputeAction(payer.secretKey, { escrowId: second.id, action: 'dispute.open', reason: 'no title' }),
    );
    assert.equal(opened.state, 'open');
    await fresh.api.disputes.addEvidence(
      second.id,
      await fresh.api.sign.disputeAction(payee.secretKey, { escrowId: second.id, action: 'dispute.evidence', note: 'it had one' }),
    );
    assert.equal(fresh.requests.filter((r) => r === 'GET /v1/sandbox/clock').length, 1, 'the clock is read once');

    // An explicit time still wins: the local clock's, refused as skew.
    const explicit = new Date().toISOString();
    const kept = await fresh.api.sign.disputeAction(payer.secretKey, {
      escrowId: second.id,
      action: 'dispute.evidence',
      note: 'n',
      signedAt: explicit,
    });
    assert.equal(kept.signedAt, explicit);
    await assert.rejects(fresh.api.disputes.addEvidence(second.id, kept), /signedAt is \d+ s from the service clock/);
  });
});
