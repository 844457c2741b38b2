// Refunds after release and refund requests (docs/protocol.md §24.4-§24.7), through the front door on
// every store: the money, the adjustment proof in the log, every refusal, idempotent repeats, and
// verifyBundle on valid and tampered adjustment bundles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { agent, clientKey, funded, PASSING_TERMS } from '../fixtures.ts';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import type { Bundle } from '@escrow-settlement/protocol/types';

const RECIPIENT = 'e'.repeat(64);

/** A released escrow whose payee and arbiter are client-held keys, with a 2.5% fee on 10. */
async function released(h: Harness, opts: Record<string, unknown> = {}) {
  const payee = clientKey();
  const arbiter = clientKey();
  const payer = await agent(h, 'payer');
  const c = await h.req('POST', '/v1/escrows', {
    amount: '10',
    asset: 'USDC',
    terms: PASSING_TERMS,
    payerAgentId: payer.id,
    payee: { publicKey: payee.publicKey },
    arbiter: { publicKey: arbiter.publicKey },
    fee: { bps: 250, recipient: RECIPIENT },
    ...opts,
  });
  assert.equal(c.status, 201, c.text);
  const id = c.body.id as string;
  assert.equal((await h.req('POST', `/v1/escrows/${id}/fund`)).status, 200);
  // The payee's delivery, signed client-side, with the service clock (x-service-now) as submittedAt.
  const payload = { title: 'done' };
  const { createHash } = await import('node:crypto');
  const { canonicalize } = await import('@escrow-settlement/protocol/crypto/jcs');
  const contentHash = createHash('sha256').update(canonicalize(payload)).digest('hex');
  const submittedAt = (await h.req('GET', '/v1/sandbox/clock')).body.now as string;
  const d = await h.req('POST', `/v1/escrows/${id}/delivery`, {
    payload,
    submittedAt,
    signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: id, contentHash, submittedAt }) },
  });
  assert.equal(d.status, 201, d.text);
  assert.ok(d.body.proof, d.text);
  return { id, payer, payee, arbiter, proof: d.body.proof };
}

const now = async (h: Harness) => (await h.req('GET', '/v1/sandbox/clock')).body.now as string;

function signedRefund(k: ReturnType<typeof clientKey>, id: string, amount: string, signedAt: string, reason = '') {
  return {
    amount,
    ...(reason ? { reason } : {}),
    signedAt,
    signature: { signer: k.publicKey, signature: k.sign({ escrowId: id, action: 'refund', amount, reason, signedAt }) },
  };
}

const pinned = async (h: Harness) => (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys;

describeStores('refunds after release', (h) => {
  test('the payee refunds part: 201 {refund, proof}, custody payee → payer, trail refund.issued, an adjustment proof in the log', async () => {
    const m = await released(h());
    assert.deepEqual(m.proof.payouts, { payee: '9.75', payer: '0', fee: '0.25' });
    const view0 = (await h().req('GET', `/v1/escrows/${m.id}`)).body;
    assert.equal(view0.refundedTotal, '0');
    assert.deepEqual(view0.refunds, []);
    const deadline = view0.refundDeadline as string;
    assert.equal(deadline, new Date(Date.parse(m.proof.issuedAt) + 30 * 86_400_000).toISOString());

    const r = await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.payee, m.id, '4', await now(h()), 'damaged'));
    assert.equal(r.status, 201, r.text);
    const { refund, proof } = r.body;
    assert.match(refund.id, /^rfd_/);
    assert.deepEqual(
      { ...refund, id: undefined, at: undefined },
      { id: undefined, at: undefined, amount: '4', reason: 'damaged', by: m.payee.publicKey },
    );
    assert.equal(proof.outcome, 'refunded-after-release');
    assert.equal(proof.adjusts, m.proof.id);
    assert.equal(proof.amount, '4');
    assert.equal(proof.refundedTotal, '4');
    assert.equal(proof.reason, 'damaged');
    const trail = (await h().req('GET', `/v1/escrows/${m.id}/trail`)).body.entries;
    assert.equal(trail[proof.trailLength - 1].event, 'refund.issued');
    assert.equal(trail[proof.trailLength - 1].hash, proof.trailHead);
    assert.deepEqual(
      trail.slice(-2).map((e: any) => e.event),
      ['refund.issued', 'proof.issued'],
    );
    const events = (await h().req('GET', `/v1/escrows/${m.id}/events`)).body.events;
    assert.deepEqual(events.at(-1).data, { proofId: proof.id, outcome: 'refunded-after-release', adjusts: m.proof.id });
    // In the log, like every proof.
    const inc = await h().req('GET', `/v1/log/proof/${proof.id}`);
    assert.equal(inc.status, 200, inc.text);
    // The closing proof stays the escrow's proof; the escrow says where the money ended.
    assert.deepEqual((await h().req('GET', `/v1/escrows/${m.id}/proof`)).body, m.proof);
    const view = (await h().req('GET', `/v1/escrows/${m.id}`)).body;
    assert.equal(view.state, 'settled');
    assert.equal(view.refundedTotal, '4');
    assert.deepEqual(view.refunds, [refund]);
    const custody = (await h().req('GET', `/v1/escrows/${m.id}/custody`)).body;
    assert.deepEqual(custody.refunds, [{ id: refund.id, amount: '4', from: 'payee', to: 'payer', at: refund.at }]);

    // The arbiter refunds the rest of the payee's net payout (the fee is not returned); one micro-unit more is refused.
    const over = await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.arbiter, m.id, '5.750001', await now(h())));
    assert.match(expectError(over, 409, 'invalid_state'), /5\.75 of the payee's net payout 9\.75 remains/);
    const rest = await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.arbiter, m.id, '5.75', await now(h())));
    assert.equal(rest.status, 201, rest.text);
    assert.equal(rest.body.proof.refundedTotal, '9.75');
    assert.equal(rest.body.refund.by, m.arbiter.publicKey);

    // The bundle of the closing proof, or of either adjustment, carries both adjustments and both consents.
    for (const pid of [m.proof.id, proof.id, rest.body.proof.id]) {
      const bundle = (await h().req('GET', `/v1/proofs/${pid}/bundle`)).body as Bundle;
      assert.equal(bundle.proof.id, m.proof.id);
      assert.deepEqual(
        bundle.adjustments!.map((a) => a.proof.id),
        [proof.id, rest.body.proof.id],
      );
      assert.deepEqual(
        bundle.parties!.signatures.filter((s) => s.kind === 'refund').map((s) => s.publicKey),
        [m.payee.publicKey, m.arbiter.publicKey],
      );
      const v = verifyBundle(bundle, { trustedKeys: await pinned(h()) });
      assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
      assert.deepEqual(v.payouts, { payee: '0', payer: '9.75', fee: '0.25' });
      for (const name of ['signature', 'inclusion', 'binding', 'trail', 'signer', 'deadline', 'total'])
        assert.equal(v.checks.find((c) => c.name === `adjustments[1].${name}`)?.ok, true, name);
      assert.equal(v.checks.find((c) => c.name === 'adjustments.complete')?.ok, true);
    }
    // The CLI prints the net payouts after the checks.
    const { main } = await import('../../packages/client/src/cli.ts');
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'refund-cli-'));
    try {
      const file = join(dir, 'bundle.json');
      writeFileSync(file, JSON.stringify((await h().req('GET', `/v1/proofs/${m.proof.id}/bundle`)).body));
      const lines: string[] = [];
      const code = await main(['verify', file, '--trusted-key', (await pinned(h())).at(-1).publicKey], {
        out: (l) => lines.push(l),
        err: (l) => lines.push(l),
      });
      assert.equal(code, 0, lines.join('\n'));
      assert.ok(lines.includes('PAYOUTS payee 0, payer 9.75, fee 0.25 (net of refunds after release)'), lines.join('\n'));
      assert.ok(lines.includes(`PASS adjustments[1].deadline: received at ${rest.body.refund.at}, before the refund deadline ${deadline}`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('verifyBundle fails tampered adjustment bundles, each under its own check', async () => {
    const m = await released(h());
    const r = await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.payee, m.id, '1', await now(h())));
    assert.equal(r.status, 201, r.text);
    const bundle = (await h().req('GET', `/v1/proofs/${m.proof.id}/bundle`)).body as Bundle;
    const keys = await pinned(h());
    const failing = (b: Bundle) => {
      const names = verifyBundle(b, { trustedKeys: keys })
        .checks.filter((c) => !c.ok)
        .map((c) => c.name);
      return Object.assign(names, { toString: () => `failing: [${names.join(', ')}]` });
    };
    assert.deepEqual([...failing(bundle)], []);
    // A changed amount breaks the issuer signature (and the log leaf).
    const amount = structuredClone(bundle);
    amount.adjustments![0].proof.amount = '0.5';
    assert.ok(failing(amount).includes('adjustments[0].signature'), `amount ${failing(amount)}`);
    assert.ok(failing(amount).includes('adjustments[0].inclusion'), `amount ${failing(amount)}`);
    // A dropped adjustment leaves a refund.issued uncovered.
    const dropped = structuredClone(bundle);
    dropped.adjustments = [];
    assert.ok(failing(dropped).includes('adjustments.complete'), `dropped ${failing(dropped)}`);
    // A forged consent: the refund signature no longer verifies.
    const forged = structuredClone(bundle);
    const sig = forged.parties!.signatures.find((s) => s.kind === 'refund')!;
    (sig.signedBody as any).amount = '9';
    assert.ok(
      failing(forged).some((n) => n.endsWith('.refund')),
      failing(forged).join(),
    );
    // A trail entry changed (the refund's signer): the chain breaks and the signer is no payee or arbiter.
    const trail = structuredClone(bundle);
    (trail.trail.at(-1)!.body as any).by = m.payer.publicKey;
    assert.ok(failing(trail).includes('trail.chain'), `trail ${failing(trail)}`);
    assert.ok(failing(trail).includes('adjustments[0].signer'), `trail ${failing(trail)}`);
  });

  test('refusals: unknown signer 403, bad signature 403, skewed signedAt 422, malformed 400, before release or with no payout 409', async () => {
    const m = await released(h());
    const stranger = clientKey();
    const at = await now(h());
    expectError(await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(stranger, m.id, '1', at)), 403, 'unauthorized_ruling');
    // The payer is no refund signer (it requests a refund instead).
    const payerAgent = await h().req('POST', `/v1/escrows/${m.id}/refunds`, { amount: '1', agentIds: [m.payer.id] });
    expectError(payerAgent, 403, 'unauthorized_ruling');
    const bad = signedRefund(m.payee, m.id, '1', at);
    bad.amount = '2';
    expectError(await h().req('POST', `/v1/escrows/${m.id}/refunds`, bad), 403, 'unauthorized_ruling');
    const old = new Date(Date.parse(at) - 600_000).toISOString();
    expectError(await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.payee, m.id, '1', old)), 422, 'unprocessable');
    for (const amount of ['0', '-1', 'x', '1.1234567']) {
      const msg = expectError(
        await h().req('POST', `/v1/escrows/${m.id}/refunds`, { ...signedRefund(m.payee, m.id, '1', at), amount }),
        400,
        'bad_request',
      );
      assert.match(msg, /amount/);
    }
    expectError(await h().req('POST', `/v1/escrows/nope_1/refunds`, signedRefund(m.payee, m.id, '1', at)), 404, 'not_found');
    // Nothing of those was recorded.
    assert.equal((await h().req('GET', `/v1/escrows/${m.id}`)).body.refundedTotal, '0');

    // Before release: 409 naming the state; a refunded escrow never paid the payee.
    const f = await funded(h());
    const held = await agent(h());
    void held;
    const early = await h().req('POST', `/v1/escrows/${f.id}/refunds`, { amount: '1', agentIds: [f.payee.id] });
    assert.match(expectError(early, 409, 'invalid_state'), /state funded/);
    assert.equal((await h().req('POST', `/v1/escrows/${f.id}/refund`)).status, 200);
    const none = await h().req('POST', `/v1/escrows/${f.id}/refunds`, { amount: '1', agentIds: [f.payee.id] });
    assert.match(expectError(none, 409, 'invalid_state'), /state refunded/);
  });

  test('past the refund deadline: 409 naming the deadline; refundWithinSeconds 0 opens no window', async () => {
    const m = await released(h(), { timeouts: { refundWithinSeconds: 60 } });
    const deadline = (await h().req('GET', `/v1/escrows/${m.id}`)).body.refundDeadline;
    assert.equal(deadline, new Date(Date.parse(m.proof.issuedAt) + 60_000).toISOString());
    assert.equal((await h().req('POST', '/v1/sandbox/clock', { advanceSeconds: 61 })).status, 200);
    const late = await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.payee, m.id, '1', await now(h())));
    assert.match(expectError(late, 409, 'invalid_state'), new RegExp(`refund deadline ${deadline.replace(/\./g, '\\.')} has passed`));
    const req = await h().req('POST', `/v1/escrows/${m.id}/refund-requests`, { amount: '1', agentIds: [m.payer.id] });
    expectError(req, 409, 'invalid_state');

    const zero = await released(h(), { timeouts: { refundWithinSeconds: 0 } });
    const view = (await h().req('GET', `/v1/escrows/${zero.id}`)).body;
    assert.equal(view.refundDeadline, undefined);
    assert.equal(view.timeouts.refundWithinSeconds, 0);
    const refused = await h().req('POST', `/v1/escrows/${zero.id}/refunds`, signedRefund(zero.payee, zero.id, '1', await now(h())));
    assert.match(expectError(refused, 409, 'invalid_state'), /no refund window/);
  });

  test('a repeat of (signer, signedAt, amount) answers the first outcome, also under Idempotency-Key, and moves nothing again', async () => {
    const m = await released(h());
    const body = signedRefund(m.payee, m.id, '2', await now(h()), 'late');
    const first = await h().req('POST', `/v1/escrows/${m.id}/refunds`, body);
    assert.equal(first.status, 201, first.text);
    const again = await h().req('POST', `/v1/escrows/${m.id}/refunds`, body);
    assert.equal(again.status, 201, again.text);
    assert.deepEqual(again.body, first.body);
    const keyed = signedRefund(m.payee, m.id, '1', await now(h()));
    const k1 = await h().req('POST', `/v1/escrows/${m.id}/refunds`, keyed, { 'idempotency-key': 'rf-1' });
    const k2 = await h().req('POST', `/v1/escrows/${m.id}/refunds`, keyed, { 'idempotency-key': 'rf-1' });
    assert.equal(k1.status, 201, k1.text);
    assert.deepEqual(k2.body, k1.body);
    const view = (await h().req('GET', `/v1/escrows/${m.id}`)).body;
    assert.equal(view.refundedTotal, '3');
    assert.equal(view.refunds.length, 2);
  });

  test('the payer requests a refund: 201, trail and event refund.requested, no money; the bundle carries the consent', async () => {
    const m = await released(h());
    const r = await h().req('POST', `/v1/escrows/${m.id}/refund-requests`, { amount: '3', reason: 'half broken', agentIds: [m.payer.id] });
    assert.equal(r.status, 201, r.text);
    assert.match(r.body.refundRequest.id, /^rfq_/);
    assert.equal(r.body.refundRequest.by, m.payer.id ? r.body.refundRequest.by : '');
    const events = (await h().req('GET', `/v1/escrows/${m.id}/events`)).body.events;
    assert.equal(events.at(-1).event, 'refund.requested');
    assert.equal(events.at(-1).data.amount, '3');
    assert.equal((await h().req('GET', `/v1/escrows/${m.id}`)).body.refundedTotal, '0');
    // The payee cannot request; the payee answers with a refund, which the bundle shows with the request.
    expectError(
      await h().req('POST', `/v1/escrows/${m.id}/refund-requests`, {
        amount: '3',
        signedAt: await now(h()),
        signature: { signer: m.payee.publicKey, signature: '00'.repeat(64) },
      }),
      403,
      'unauthorized_ruling',
    );
    const refund = await h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.payee, m.id, '3', await now(h()), 'agreed'));
    assert.equal(refund.status, 201, refund.text);
    const bundle = (await h().req('GET', `/v1/proofs/${refund.body.proof.id}/bundle`)).body as Bundle;
    assert.deepEqual(
      bundle.parties!.signatures.filter((s) => s.kind.startsWith('refund')).map((s) => s.kind),
      ['refund.request', 'refund'],
    );
    const v = verifyBundle(bundle, { trustedKeys: await pinned(h()) });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
    assert.deepEqual(v.payouts, { payee: '6.75', payer: '3', fee: '0.25' });
  });

  test('a refund after release gives its amount back to the mandate usage', async () => {
    const { generateKeyPairSync, sign } = await import('node:crypto');
    const { canonicalize } = await import('@escrow-settlement/protocol/crypto/jcs');
    const payer = await agent(h());
    const payee = await agent(h());
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const principal = Buffer.from(publicKey.export({ format: 'der', type: 'spki' }).subarray(12)).toString('hex');
    const caps = {
      agent: payer.publicKey,
      perEscrowMax: '10',
      cumulativeMax: '10',
      allowedAssets: ['USDC'],
      expiresAt: '2099-01-01T00:00:00Z',
    };
    const mandate = await h().req('POST', '/v1/mandates', {
      principal,
      caps,
      signature: { signer: principal, signature: sign(null, Buffer.from(canonicalize({ principal, caps })), privateKey).toString('hex') },
    });
    assert.equal(mandate.status, 201, mandate.text);
    const make = () =>
      h().req('POST', '/v1/escrows', {
        amount: '10',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
        mandateId: mandate.body.id,
      });
    const e = await make();
    assert.equal(e.status, 201, e.text);
    await h().req('POST', `/v1/escrows/${e.body.id}/fund`);
    const d = await h().req('POST', `/v1/escrows/${e.body.id}/delivery`, { agentId: payee.id, payload: { title: 't' } });
    assert.ok(d.body.proof);
    expectError(await make(), 403, 'mandate_violation');
    const r = await h().req('POST', `/v1/escrows/${e.body.id}/refunds`, { amount: '10', agentIds: [payee.id] });
    assert.equal(r.status, 201, r.text);
    assert.equal((await make()).status, 201, 'the refunded 10 is back under cumulativeMax');
  });
});

describeStores('concurrent refunds after release', (h) => {
  test('twelve concurrent refunds of 1.5 against a net payout of 9.75: six succeed, the rest are 409, the total never passes it', async () => {
    const m = await released(h());
    const base = Date.parse(await now(h()));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        h().req('POST', `/v1/escrows/${m.id}/refunds`, signedRefund(m.payee, m.id, '1.5', new Date(base + i).toISOString())),
      ),
    );
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status !== 201);
    assert.equal(ok.length, 6, results.map((r) => r.status).join());
    for (const r of refused) assert.match(expectError(r, 409, 'invalid_state'), /remains to refund/);
    const view = (await h().req('GET', `/v1/escrows/${m.id}`)).body;
    assert.equal(view.refundedTotal, '9');
    assert.equal(view.refunds.length, 6);
    const totals = ok.map((r) => r.body.proof.refundedTotal).sort();
    assert.deepEqual(totals, ['1.5', '3', '4.5', '6', '7.5', '9']);
  });
});
