import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeStores, expectError } from '../harness.ts';
import { agent, clientKey, failedDelivery, funded, settled, PASSING_TERMS } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describeStores('disputes', (h) => {
  test('a party opens a dispute after a failed verdict; the escrow becomes disputed with a decide deadline', async () => {
    const e = await failedDelivery(h(), { timeouts: { decideWithinSeconds: 3600 } });
    const r = await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id, reason: 'missing title' });
    assert.equal(r.status, 201, r.text);
    assert.match(r.body.id, /^dsp_/);
    assert.equal(r.body.state, 'open');
    assert.equal(r.body.openedBy, e.payer.publicKey);
    assert.equal(r.body.reason, 'missing title');
    assert.deepEqual(r.body.evidence, []);
    const esc = (await h().req('GET', `/v1/escrows/${e.id}`)).body;
    assert.equal(esc.state, 'disputed');
    assert.equal(Date.parse(esc.deadlineAt) - Date.parse(r.body.openedAt), 3600_000);
    assert.deepEqual((await h().req('GET', `/v1/escrows/${e.id}/dispute`)).body, r.body);
    const ev = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events.at(-1);
    assert.deepEqual(ev, {
      event: 'dispute.opened',
      escrowId: e.id,
      at: r.body.openedAt,
      data: { disputeId: r.body.id, openedBy: e.payer.publicKey, reason: 'missing title' },
    });
    // One dispute per escrow; refund is closed while disputed.
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payee.id }), 409, 'invalid_state');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/refund`), 409, 'invalid_state');
  });

  test('opening is refused for non-parties (422), unknown agents (404), and escrows that are not delivered-and-failed (409)', async () => {
    const e = await failedDelivery(h());
    const stranger = await agent(h());
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: stranger.id }), 422, 'unprocessable');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa' }), 404, 'not_found');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute`, {}), 400, 'bad_request');
    expectError(
      await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id, reason: 'x'.repeat(4001) }),
      400,
      'bad_request',
    );
    const f = await funded(h());
    expectError(await h().req('POST', `/v1/escrows/${f.id}/dispute`, { agentId: f.payer.id }), 409, 'invalid_state');
    const s = await settled(h());
    expectError(await h().req('POST', `/v1/escrows/${s.id}/dispute`, { agentId: s.payer.id }), 409, 'invalid_state');
    expectError(await h().req('POST', '/v1/escrows/esc_01aaaaaaaaaaaaaaaaaaaaaaaa/dispute', { agentId: s.payer.id }), 404, 'not_found');
    expectError(await h().req('GET', `/v1/escrows/${f.id}/dispute`), 404, 'not_found');
  });

  test("evidence is recorded by content hash; the counterparty's first evidence moves the dispute under review", async () => {
    const e = await failedDelivery(h());
    await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id });
    const own = await h().req('POST', `/v1/escrows/${e.id}/dispute/evidence`, {
      agentId: e.payer.id,
      note: 'see spec',
      payload: { page: 3 },
    });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.state, 'open');
    assert.equal(own.body.evidence[0].contentHash, sha(canonicalize({ page: 3 })));
    assert.equal(own.body.evidence[0].note, 'see spec');
    const other = await h().req('POST', `/v1/escrows/${e.id}/dispute/evidence`, { agentId: e.payee.id, note: 'it had a title' });
    assert.equal(other.body.state, 'under-review');
    assert.equal(other.body.evidence[1].contentHash, sha(canonicalize('it had a title')));
    assert.equal(other.body.evidence[1].party, e.payee.publicKey);
    const ev = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events.at(-1);
    assert.deepEqual(ev.data, { disputeId: other.body.id, party: e.payee.publicKey, contentHash: other.body.evidence[1].contentHash });
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute/evidence`, { agentId: e.payee.id }), 400, 'bad_request');
    const stranger = await agent(h());
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute/evidence`, { agentId: stranger.id, note: 'x' }), 422, 'unprocessable');
    const f = await failedDelivery(h());
    expectError(await h().req('POST', `/v1/escrows/${f.id}/dispute/evidence`, { agentId: f.payer.id, note: 'x' }), 404, 'not_found');
  });

  test('a co-signed ruling from held keys resolves the dispute and closes the matter in a proof', async () => {
    const e = await failedDelivery(h());
    const d = (await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id })).body;
    const r = await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, {
      outcome: 'release',
      rationale: 'title was in the body',
      agentIds: [e.payer.id, e.payee.id],
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.dispute.state, 'resolved');
    assert.equal(r.body.dispute.ruling.outcome, 'release');
    assert.equal(r.body.dispute.ruling.decidedBy, 'co-signature');
    assert.equal(r.body.dispute.ruling.rationale, 'title was in the body');
    assert.equal(r.body.proof.outcome, 'released');
    assert.equal(r.body.proof.disputeId, d.id);
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'resolved');
    const events = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events;
    assert.deepEqual(
      events.slice(-2).map((x: any) => x.event),
      ['dispute.resolved', 'proof.issued'],
    );
    assert.deepEqual(events.at(-2).data, { disputeId: d.id, outcome: 'release', decidedBy: 'co-signature' });
    expectError(
      await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, { outcome: 'refund', agentIds: [e.payer.id, e.payee.id] }),
      409,
      'invalid_state',
    );
    expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute/evidence`, { agentId: e.payer.id, note: 'late' }), 409, 'invalid_state');
  });

  test('the named arbiter rules alone with a client signature; a split carries its shares into the proof', async () => {
    const arb = clientKey();
    const e = await failedDelivery(h(), { amount: '10.000001', arbiter: { publicKey: arb.publicKey } });
    const d = (await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payee.id })).body;
    const shares = { payerBps: 2500, payeeBps: 7500 };
    const body = { escrowId: e.id, disputeId: d.id, outcome: 'split', rationale: '', shares };
    const r = await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, {
      outcome: 'split',
      shares,
      signatures: [{ signer: arb.publicKey, signature: arb.sign(body) }],
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.dispute.ruling.decidedBy, 'arbiter');
    assert.deepEqual(r.body.dispute.ruling.shares, shares);
    assert.equal(r.body.proof.outcome, 'split');
    assert.deepEqual(r.body.proof.shares, shares);
    const custody = (await h().req('GET', `/v1/escrows/${e.id}/custody`)).body;
    // payee gets floor(10000001 × 7500 / 10000) = 7500000 micro-units, payer the rest.
    assert.equal(custody.payeeAmount, '7.5');
    assert.equal(custody.payerAmount, '2.500001');
    assert.equal(custody.status, 'confirmed');
  });

  test('rulings without the required signatures, or with malformed, missing or unasked-for shares, are 403 unauthorized_ruling naming the field', async () => {
    const e = await failedDelivery(h());
    const d = (await h().req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id })).body;
    const stranger = await agent(h());
    const rows: Array<[string, Record<string, unknown>, RegExp]> = [
      ['one party only', { outcome: 'refund', agentIds: [e.payer.id] }, /both payer and payee/],
      ['no signatures at all', { outcome: 'refund' }, /signatures/],
      ['a stranger with one party', { outcome: 'refund', agentIds: [e.payer.id, stranger.id] }, /signatures/],
      [
        'a signature over another body',
        { outcome: 'refund', signatures: [{ signer: e.payer.publicKey, signature: 'ab'.repeat(64) }] },
        /does not verify/,
      ],
    ];
    for (const [what, body, msg] of rows) {
      assert.match(expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, body), 403, 'unauthorized_ruling'), msg, what);
    }
    const both = [e.payer.id, e.payee.id];
    const shareRows: Array<[string, Record<string, unknown>, RegExp]> = [
      ['a split without shares', { outcome: 'split', agentIds: both }, /^shares: required on a split ruling/],
      ['a split missing a share', { outcome: 'split', shares: { payerBps: 10000 }, agentIds: both }, /^shares\.payeeBps: required/],
      ['shares not summing to 10000', { outcome: 'split', shares: { payerBps: 5000, payeeBps: 4000 }, agentIds: both }, /10000/],
      [
        'fractional shares',
        { outcome: 'split', shares: { payerBps: 5000.5, payeeBps: 4999.5 }, agentIds: both },
        /^shares\.payerBps: .*integer/,
      ],
      ['an unknown share', { outcome: 'split', shares: { payerBps: 5000, payeeBps: 5000, feeBps: 0 }, agentIds: both }, /^shares\.feeBps/],
      [
        'shares on a refund',
        { outcome: 'refund', shares: { payerBps: 5000, payeeBps: 5000 }, agentIds: both },
        /^shares: only allowed on a split/,
      ],
    ];
    for (const [what, body, msg] of shareRows) {
      assert.match(expectError(await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, body), 403, 'unauthorized_ruling'), msg, what);
    }
    expectError(
      await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, { outcome: 'maybe', agentIds: [e.payer.id] }),
      400,
      'bad_request',
    );
    expectError(
      await h().req('POST', `/v1/escrows/${e.id}/dispute/resolve`, { outcome: 'refund', agentIds: ['agt_01aaaaaaaaaaaaaaaaaaaaaaaa'] }),
      404,
      'not_found',
    );
    const dd = (await h().req('GET', `/v1/escrows/${e.id}/dispute`)).body;
    assert.equal(dd.state, 'open');
    assert.equal(dd.id, d.id);
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'disputed');
  });

  test('parties without held keys dispute with the client-signed forms', async () => {
    const payer = clientKey();
    const payee = await agent(h());
    const c = (
      await h().req('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payer: { publicKey: payer.publicKey },
        payeeAgentId: payee.id,
      })
    ).body;
    await h().req('POST', `/v1/escrows/${c.id}/fund`);
    await h().req('POST', `/v1/escrows/${c.id}/delivery`, { agentId: payee.id, payload: {} });
    const signedAt = new Date().toISOString();
    const bad = await h().req('POST', `/v1/escrows/${c.id}/dispute`, {
      party: payer.publicKey,
      reason: 'r',
      signedAt,
      signature: { signer: payer.publicKey, signature: payer.sign({ escrowId: c.id, action: 'dispute.open', signedAt }) },
    });
    assert.match(expectError(bad, 422, 'unprocessable'), /does not verify/);
    const open = await h().req('POST', `/v1/escrows/${c.id}/dispute`, {
      party: payer.publicKey,
      reason: 'r',
      signedAt,
      signature: { signer: payer.publicKey, signature: payer.sign({ escrowId: c.id, action: 'dispute.open', reason: 'r', signedAt }) },
    });
    assert.equal(open.status, 201, open.text);
    assert.equal(open.body.openedBy, payer.publicKey);
    const payload = { screenshot: 'sha' };
    const contentHash = sha(canonicalize(payload));
    const ev = await h().req('POST', `/v1/escrows/${c.id}/dispute/evidence`, {
      party: payer.publicKey,
      note: 'n',
      payload,
      signedAt,
      signature: {
        signer: payer.publicKey,
        signature: payer.sign({ escrowId: c.id, action: 'dispute.evidence', note: 'n', contentHash, signedAt }),
      },
    });
    assert.equal(ev.status, 200, ev.text);
    assert.equal(ev.body.evidence[0].contentHash, contentHash);
  });
});
