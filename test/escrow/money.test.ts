// Money after the verdict (docs/protocol.md §24.1-§24.3): fees, partial capture, metered prices,
// each through the front door on every store, and the payouts a bundle verifier recomputes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { agent, clientKey, funded, PASSING_TERMS } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { exactDecimal, withinMeteredPrice } from '@escrow-settlement/protocol/amounts';
import type { Bundle } from '@escrow-settlement/protocol/types';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const RECIPIENT = 'f'.repeat(64);

const deliver = (h: Harness, id: string, agentId: string, extra: Record<string, unknown> = {}, payload: unknown = { title: 'done' }) =>
  h.req('POST', `/v1/escrows/${id}/delivery`, { agentId, payload, ...extra });

async function pinned(h: Harness) {
  return (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys;
}

describeStores('money after the verdict: fees, partial capture, metered prices', (h) => {
  test('a fee is floor(payee share × bps / 10000) of a release, in the proof, the custody journal and the escrow', async () => {
    const e = await funded(h(), { amount: '10.000003', fee: { bps: 250, recipient: RECIPIENT } });
    assert.deepEqual(e.escrow.fee, { bps: 250, recipient: RECIPIENT });
    const d = await deliver(h(), e.id, e.payee.id);
    assert.equal(d.status, 201, d.text);
    const p = d.body.proof;
    // 10000003 × 250 / 10000 = 250000.075 → 250000 micro-units.
    assert.deepEqual(p.fee, { bps: 250, recipient: RECIPIENT, amount: '0.25' });
    assert.deepEqual(p.payouts, { payee: '9.750003', payer: '0', fee: '0.25' });
    assert.equal(p.captured, undefined);
    const j = (await h().req('GET', `/v1/escrows/${e.id}/custody`)).body;
    assert.equal(j.payeeAmount, '9.750003');
    assert.equal(j.payerAmount, '0');
    assert.equal(j.feeAmount, '0.25');
    assert.equal(j.feeRecipient, RECIPIENT);
    const bundle = (await h().req('GET', `/v1/proofs/${p.id}/bundle`)).body as Bundle;
    const v = verifyBundle(bundle, { trustedKeys: await pinned(h()) });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
    assert.equal(v.checks.find((c) => c.name === 'payouts.sum')?.ok, true);
  });

  test('a refund pays no fee; an escrow without a fee shows payouts with a zero fee and journals no fee leg', async () => {
    const e = await funded(h(), { fee: { bps: 10_000, recipient: RECIPIENT } });
    const r = await h().req('POST', `/v1/escrows/${e.id}/refund`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.payouts, { payee: '0', payer: '10', fee: '0' });
    assert.deepEqual(r.body.fee, { bps: 10_000, recipient: RECIPIENT, amount: '0' });
    const plain = await funded(h());
    const d = await deliver(h(), plain.id, plain.payee.id);
    assert.deepEqual(d.body.proof.payouts, { payee: '10', payer: '0', fee: '0' });
    assert.equal(d.body.proof.fee, undefined);
    const j = (await h().req('GET', `/v1/escrows/${plain.id}/custody`)).body;
    assert.equal(j.feeAmount, undefined);
    assert.deepEqual(j.refunds, []);
  });

  test('fee validation: bps outside 0..10000, a non-integer, a bad recipient: 400 naming fee', async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    const base = { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id };
    for (const fee of [
      { bps: 10_001, recipient: RECIPIENT },
      { bps: 1.5, recipient: RECIPIENT },
      { bps: -1, recipient: RECIPIENT },
      { bps: 1, recipient: 'x' },
      { bps: 1 },
    ]) {
      const msg = expectError(await h().req('POST', '/v1/escrows', { ...base, fee }), 400, 'bad_request');
      assert.match(msg, /fee/, msg);
    }
  });

  test('partial capture: the claim is released less the fee, the rest returns to the payer in the same closing', async () => {
    const e = await funded(h(), { fee: { bps: 1000, recipient: RECIPIENT } });
    const d = await deliver(h(), e.id, e.payee.id, { amount: '4.000001' });
    assert.equal(d.status, 201, d.text);
    assert.equal(d.body.delivery.amount, '4.000001');
    const p = d.body.proof;
    assert.equal(p.outcome, 'released');
    assert.equal(p.captured, '4.000001');
    assert.equal(p.amount, '10');
    // fee floor(4000001 × 1000 / 10000) = 400000; payee 3600001; payer 6.
    assert.deepEqual(p.payouts, { payee: '3.600001', payer: '5.999999', fee: '0.4' });
    const events = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events;
    assert.equal(events.find((x: any) => x.event === 'delivery.submitted').data.amount, '4.000001');
    const bundle = (await h().req('GET', `/v1/proofs/${p.id}/bundle`)).body as Bundle;
    const delivery = bundle.parties!.signatures.find((s) => s.kind === 'delivery')!;
    assert.equal((delivery.signedBody as any).amount, '4.000001');
    const v = verifyBundle(bundle, { trustedKeys: await pinned(h()) });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
    // Tampering with the payouts breaks the sum and the signature.
    const bad = structuredClone(bundle);
    bad.proof.payouts = { payee: '3.600001', payer: '6', fee: '0.4' };
    const vb = verifyBundle(bad, { trustedKeys: await pinned(h()) });
    assert.equal(vb.checks.find((c) => c.name === 'payouts.sum')?.ok, false);
    assert.equal(vb.ok, false);
  });

  test('a claim over the amount, zero or malformed: 400 naming amount, nothing recorded', async () => {
    const e = await funded(h());
    for (const amount of ['10.000001', '0', '-1', '1.0000001', 5, '']) {
      const msg = expectError(await deliver(h(), e.id, e.payee.id, { amount }), 400, 'bad_request');
      assert.match(msg, /amount/, msg);
    }
    const esc = (await h().req('GET', `/v1/escrows/${e.id}`)).body;
    assert.equal(esc.state, 'funded');
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}/trail`)).body.entries.length, 2);
    assert.equal((await deliver(h(), e.id, e.payee.id, { amount: '10' })).body.proof.captured, '10');
  });

  test('a client-signed partial capture signs JCS {escrowId, contentHash, submittedAt, amount}; the body without amount does not verify', async () => {
    const payee = clientKey();
    const payer = await agent(h());
    const c = await h().req('POST', '/v1/escrows', {
      amount: '2',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payee: { publicKey: payee.publicKey },
    });
    const id = c.body.id;
    await h().req('POST', `/v1/escrows/${id}/fund`);
    const payload = { title: 'x' };
    const contentHash = sha(canonicalize(payload));
    const submittedAt = new Date().toISOString();
    const withoutAmount = payee.sign({ escrowId: id, contentHash, submittedAt });
    const msg = expectError(
      await h().req('POST', `/v1/escrows/${id}/delivery`, {
        payload,
        submittedAt,
        amount: '0.5',
        signature: { signer: payee.publicKey, signature: withoutAmount },
      }),
      422,
      'unprocessable',
    );
    assert.match(msg, /amount/);
    const signed = payee.sign({ escrowId: id, contentHash, submittedAt, amount: '0.5' });
    const d = await h().req('POST', `/v1/escrows/${id}/delivery`, {
      payload,
      submittedAt,
      amount: '0.5',
      signature: { signer: payee.publicKey, signature: signed },
    });
    assert.equal(d.status, 201, d.text);
    assert.deepEqual(d.body.proof.payouts, { payee: '0.5', payer: '1.5', fee: '0' });
  });

  test('a ruling that releases later releases the claim; a split splits the claim and returns the rest', async () => {
    const terms = { description: 'needs a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
    const e = await funded(h(), { terms, fee: { bps: 100, recipient: RECIPIENT } });
    const d = await deliver(h(), e.id, e.payee.id, { amount: '6' }, { body: 'no title' });
    assert.equal(d.body.verdict.passed, false);
    await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id });
    const r = await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, {
      outcome: 'split',
      shares: { payerBps: 5000, payeeBps: 5000 },
      agentIds: [e.payer.id, e.payee.id],
    });
    assert.equal(r.status, 200, r.text);
    // share floor(6 × 0.5) = 3; fee floor(3 × 1%) = 0.03; the payer gets 10 - 3.
    assert.equal(r.body.proof.captured, '6');
    assert.deepEqual(r.body.proof.payouts, { payee: '2.97', payer: '7', fee: '0.03' });
  });

  test('metered price: passes while the claim ≤ perUnit × units (and ≤ max); the verdict names it; replay re-runs it', async () => {
    const terms = { description: 'metered', checks: [{ kind: 'price', perUnit: '0.1', units: '/usage/tokens', max: '5' }] };
    const e = await funded(h(), { terms });
    // 0.1 × 30 = 3 exactly; 3 is claimed.
    const d = await deliver(h(), e.id, e.payee.id, { amount: '3' }, { usage: { tokens: 30 } });
    assert.equal(d.status, 201, d.text);
    assert.equal(d.body.verdict.passed, true, JSON.stringify(d.body.verdict));
    assert.equal(d.body.verdict.results[0].check.kind, 'price');
    const bundle = (await h().req('GET', `/v1/proofs/${d.body.proof.id}/bundle?disclose=payload`)).body as Bundle;
    const v = verifyBundle(bundle, { trustedKeys: await pinned(h()) });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
    assert.match(v.checks.find((c) => c.name === 'verdict.replay')!.detail, /re-ran all 1 checks/);
    // The replay fails if the disclosed usage is changed (the payload no longer hashes), and a tampered claim fails it too.
    const over = await funded(h(), { terms });
    const f = await deliver(h(), over.id, over.payee.id, { amount: '3.000001' }, { usage: { tokens: 30 } });
    assert.equal(f.body.verdict.passed, false);
    assert.deepEqual(f.body.verdict.results[0].passed, false);
    const whole = await funded(h(), { terms });
    const w = await deliver(h(), whole.id, whole.payee.id, {}, { usage: { tokens: 1000 } });
    assert.equal(w.body.verdict.passed, false, 'the whole 10 is over the max 5');
    assert.match(w.body.verdict.results[0].detail, /max/);
    for (const tokens of [-1, '30', null]) {
      const x = await funded(h(), { terms });
      const r = await deliver(h(), x.id, x.payee.id, { amount: '1' }, { usage: { tokens } });
      assert.equal(r.body.verdict.passed, false, String(tokens));
    }
  });

  test('price check validation: 400 naming the field', async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    const base = { amount: '1', asset: 'USDC', payerAgentId: payer.id, payeeAgentId: payee.id };
    for (const [check, field] of [
      [{ kind: 'price', perUnit: '0', units: '/n' }, 'perUnit'],
      [{ kind: 'price', perUnit: 1, units: '/n' }, 'perUnit'],
      [{ kind: 'price', perUnit: '1', units: 'n' }, 'units'],
      [{ kind: 'price', perUnit: '1', units: '/n', max: '1e3' }, 'max'],
      [{ kind: 'price', perUnit: '1', units: '/n', extra: 1 }, 'extra'],
    ] as const) {
      const msg = expectError(
        await h().req('POST', '/v1/escrows', { ...base, terms: { description: 'd', checks: [check] } }),
        400,
        'bad_request',
      );
      assert.match(msg, new RegExp(field), msg);
    }
  });
});

test('metered arithmetic is exact: units are read as their shortest round-trip decimal', () => {
  assert.deepEqual(exactDecimal(0.1), { num: 1n, scale: 1 });
  assert.deepEqual(exactDecimal(1e21), { num: 10n ** 21n, scale: 0 });
  assert.deepEqual(exactDecimal(1.5e-7), { num: 15n, scale: 8 });
  // 0.1 × 3 is 0.30000000000000004 in floats; here 0.3 units at 1 per unit is exactly 0.3.
  assert.equal(withinMeteredPrice(300_000n, 1_000_000n, 0.3), true);
  assert.equal(withinMeteredPrice(300_001n, 1_000_000n, 0.3), false);
  assert.equal(withinMeteredPrice(3_000_000n, 100_000n, 30), true);
  assert.equal(withinMeteredPrice(1n, 1n, 0), false);
  assert.equal(withinMeteredPrice(0n, 1n, 0), true);
});

describeStores('the commands as the x402 facilitator calls them', (h) => {
  test('submitDelivery with an amount and a fee chosen at capture; refundAfterRelease with the payee consent', async () => {
    const { submitDelivery } = await import('../../src/escrow/deliver.ts');
    const { refundAfterRelease } = await import('../../src/escrow/refundAfterRelease.ts');
    const payee = clientKey();
    const payer = await agent(h());
    const c = await h().req('POST', '/v1/escrows', {
      amount: '5',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payee: { publicKey: payee.publicKey },
    });
    const id = c.body.id as string;
    await h().req('POST', `/v1/escrows/${id}/fund`);
    const payload = { title: 'x' };
    const contentHash = sha(canonicalize(payload));
    const submittedAt = (await h().req('GET', '/v1/sandbox/clock')).body.now as string;
    const r = await submitDelivery(h().app.svc, id, {
      form: 'client',
      payload,
      submittedAt,
      amount: 4_000_000n,
      signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: id, contentHash, submittedAt, amount: '4' }) },
      fee: { bps: 500, recipient: RECIPIENT },
    });
    assert.deepEqual(r.proof?.payouts, { payee: '3.8', payer: '1', fee: '0.2' });
    assert.deepEqual(r.proof?.fee, { bps: 500, recipient: RECIPIENT, amount: '0.2' });
    assert.deepEqual((await h().req('GET', `/v1/escrows/${id}`)).body.fee, { bps: 500, recipient: RECIPIENT });
    const events = (await h().req('GET', `/v1/escrows/${id}/events`)).body.events;
    assert.deepEqual(events.find((x: any) => x.event === 'delivery.submitted').data.fee, { bps: 500, recipient: RECIPIENT });
    const bundle = (await h().req('GET', `/v1/proofs/${r.proof!.id}/bundle`)).body as Bundle;
    assert.equal(verifyBundle(bundle, { trustedKeys: await pinned(h()) }).ok, true);

    const signedAt = (await h().req('GET', '/v1/sandbox/clock')).body.now as string;
    const consent = payee.sign({ escrowId: id, action: 'refund', amount: '3.8', reason: '', signedAt });
    const act = { form: 'client' as const, signedAt, signature: { signer: payee.publicKey, signature: consent } };
    const refund = await refundAfterRelease(h().app.svc, id, { amount: 3_800_000n, reason: '', act });
    assert.equal(refund.created, true);
    assert.equal(refund.proof.outcome, 'refunded-after-release');
    assert.equal(refund.proof.refundedTotal, '3.8');
    // The same consent again answers the first outcome; nothing remains for another.
    const again = await refundAfterRelease(h().app.svc, id, { amount: 3_800_000n, reason: '', act });
    assert.equal(again.created, false);
    assert.deepEqual(again.proof, refund.proof);
    await assert.rejects(
      refundAfterRelease(h().app.svc, id, { amount: 1n, reason: '', act: { form: 'sandbox', agentId: payer.id } }),
      (e: any) => e.code === 'unauthorized_ruling',
    );
  });
});

describeStores('a timeout that releases a partial capture', (h) => {
  test('the sweep releases the claim less the fee and returns the rest; the bundle verifies', async () => {
    const { sweepOnce } = await import('../../src/jobs/sweep.ts');
    const e = await funded(h(), {
      fee: { bps: 2000, recipient: RECIPIENT },
      timeouts: { decideWithinSeconds: 60, timeoutRuling: 'release' },
    });
    const d = await deliver(h(), e.id, e.payee.id, { amount: '2.5' }, { body: 'no title' });
    assert.equal(d.body.verdict.passed, false);
    await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id });
    assert.equal((await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 61 })).status, 200);
    let r = await sweepOnce(h().app.svc);
    while (r.closed === 100) r = await sweepOnce(h().app.svc);
    const p = (await h().req('GET', `/v1/escrows/${e.id}/proof`)).body;
    assert.equal(p.outcome, 'released');
    assert.equal(p.captured, '2.5');
    assert.deepEqual(p.payouts, { payee: '2', payer: '7.5', fee: '0.5' });
    const bundle = (await h().req('GET', `/v1/proofs/${p.id}/bundle`)).body as Bundle;
    const v = verifyBundle(bundle, { trustedKeys: await pinned(h()) });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
  });
});
