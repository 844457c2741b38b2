import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, makeHarness } from '../harness.ts';
import { failedDelivery, funded } from '../fixtures.ts';

describeStores('custody failures and retry', (h) => {
  const failNext = async (count: number) =>
    assert.equal((await h().req('POST', '/v1/sandbox/custody/fail-next', { count })).body.failNext, count);

  test('a passing delivery that custody cannot settle answers 201 without a proof; retry settles it exactly once', async () => {
    const e = await funded(h());
    await failNext(1);
    const d = await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 't' } });
    assert.equal(d.status, 201, d.text);
    assert.equal(d.body.verdict.passed, true);
    assert.equal(d.body.proof, undefined);
    const esc = (await h().req('GET', `/v1/escrows/${e.id}`)).body;
    assert.equal(esc.state, 'delivered');
    assert.equal(esc.custody.status, 'settle-failed');
    assert.equal(esc.deadlineAt, undefined);
    const j = (await h().req('GET', `/v1/escrows/${e.id}/custody`)).body;
    assert.equal(j.status, 'settle-failed');
    assert.equal(j.attempts, 1);
    assert.equal(j.outcome, 'released');
    assert.equal(j.payeeAmount, '10');
    assert.match(j.lastError, /simulated/);
    expectError(await h().req('GET', `/v1/escrows/${e.id}/proof`), 404, 'not_found');
    const events = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events;
    assert.deepEqual(events.at(-1), {
      event: 'custody.failed',
      escrowId: e.id,
      at: events.at(-1).at,
      data: { attempt: 1, error: j.lastError },
    });
    // Nothing else may close it while it waits for the retry.
    expectError(await h().req('POST', `/v1/escrows/${e.id}/refund`), 409, 'invalid_state');

    await failNext(1);
    assert.equal(expectError(await h().req('POST', `/v1/escrows/${e.id}/custody/retry`), 502, 'custody_failed').length > 0, true);
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}/custody`)).body.attempts, 2);
    const p = await h().req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.outcome, 'released');
    assert.ok(p.body.deliveryHash);
    const again = await h().req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.deepEqual(again.body, p.body);
    const final = (await h().req('GET', `/v1/escrows/${e.id}/custody`)).body;
    assert.equal(final.status, 'confirmed');
    assert.equal(final.attempts, 3, 'a retry of a confirmed settlement never calls custody again');
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'settled');
    const names = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events.map((x: any) => x.event);
    assert.deepEqual(names, [
      'escrow.created',
      'escrow.funded',
      'delivery.submitted',
      'verdict.passed',
      'custody.failed',
      'custody.failed',
      'proof.issued',
    ]);
  });

  test('a refund and a ruling that cannot settle answer 502 custody_failed and keep the journal for retry', async () => {
    const e = await funded(h());
    await failNext(1);
    expectError(await h().req('POST', `/v1/escrows/${e.id}/refund`), 502, 'custody_failed');
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'funded');
    const p = await h().req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(p.body.outcome, 'refunded');
    const names = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events.map((x: any) => x.event);
    assert.deepEqual(names.slice(-3), ['custody.failed', 'escrow.refunded', 'proof.issued']);

    const f = await failedDelivery(h());
    await h().req('POST', `/v1/escrows/${f.id}/dispute`, { agentId: f.payer.id });
    await failNext(1);
    expectError(
      await h().req('POST', `/v1/escrows/${f.id}/dispute/resolve`, { outcome: 'refund', agentIds: [f.payer.id, f.payee.id] }),
      502,
      'custody_failed',
    );
    assert.equal((await h().req('GET', `/v1/escrows/${f.id}/dispute`)).body.state, 'open');
    const r = await h().req('POST', `/v1/escrows/${f.id}/custody/retry`);
    assert.equal(r.status, 200);
    assert.equal(r.body.outcome, 'refunded');
    const dispute = (await h().req('GET', `/v1/escrows/${f.id}/dispute`)).body;
    assert.equal(dispute.state, 'resolved');
    assert.equal(dispute.ruling.decidedBy, 'co-signature');
  });

  test('custody routes answer 404 before any settlement and for unknown escrows', async () => {
    const e = await funded(h());
    expectError(await h().req('GET', `/v1/escrows/${e.id}/custody`), 404, 'not_found');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/custody/retry`), 404, 'not_found');
    expectError(await h().req('GET', '/v1/escrows/esc_01aaaaaaaaaaaaaaaaaaaaaaaa/custody'), 404, 'not_found');
    expectError(await h().req('POST', '/v1/sandbox/custody/fail-next', { count: -1 }), 400, 'bad_request');
    expectError(await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 0 }), 400, 'bad_request');
    expectError(await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: -5 }), 400, 'bad_request');
  });
});

test('sandbox controls are 403 forbidden on a hosted deployment', async () => {
  const h = await makeHarness('pglite', { API_KEY: 'root-secret-0123456789' });
  try {
    const auth = { authorization: 'Bearer root-secret-0123456789' };
    expectError(await h.req('POST', '/v1/sandbox/clock', { advanceSeconds: 10 }, auth), 403, 'forbidden');
    expectError(await h.req('POST', '/v1/sandbox/custody/fail-next', { count: 1 }, auth), 403, 'forbidden');
  } finally {
    await h.close();
  }
});
