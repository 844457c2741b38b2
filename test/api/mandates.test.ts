import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { agent, clientKey, PASSING_TERMS } from '../fixtures.ts';

describeStores('mandates', (h) => {
  async function setup(capsOver: Record<string, unknown> = {}) {
    const principal = clientKey();
    const payer = await agent(h(), 'agent');
    const payee = await agent(h(), 'payee');
    const caps = {
      agent: payer.publicKey,
      perEscrowMax: '10',
      cumulativeMax: '25',
      allowedAssets: ['USDC'],
      expiresAt: '2099-01-01T00:00:00.000Z',
      ...capsOver,
    };
    const body = {
      principal: principal.publicKey,
      caps,
      signature: { signer: principal.publicKey, signature: principal.sign({ principal: principal.publicKey, caps }) },
    };
    return { principal, payer, payee, caps, body };
  }
  const create = (m: string, payerId: string, payeeId: string, amount: string, extra: Record<string, unknown> = {}) =>
    h().req('POST', '/v1/escrows', {
      amount,
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payerId,
      payeeAgentId: payeeId,
      mandateId: m,
      ...extra,
    });

  test('a mandate registers once by content hash: 201 new, 200 on identical resubmission with usage intact', async () => {
    const s = await setup();
    const r = await h().req('POST', '/v1/mandates', s.body);
    assert.equal(r.status, 201, r.text);
    assert.match(r.body.id, /^mnd_/);
    assert.match(r.body.hash, /^[0-9a-f]{64}$/);
    assert.deepEqual(r.body.usage, { spent: '0', remaining: '25' });
    assert.equal((await create(r.body.id, s.payer.id, s.payee.id, '4')).status, 201);
    const again = await h().req('POST', '/v1/mandates', s.body);
    assert.equal(again.status, 200);
    assert.equal(again.body.id, r.body.id);
    assert.deepEqual(again.body.usage, { spent: '4', remaining: '21' });
    const got = await h().req('GET', `/v1/mandates/${r.body.id}`);
    assert.deepEqual(got.body, again.body);
  });

  test('a mandate signed by someone else, or with a bad signature, is 403 mandate_violation', async () => {
    const s = await setup();
    const other = clientKey();
    const wrong = {
      ...s.body,
      signature: { signer: other.publicKey, signature: other.sign({ principal: s.principal.publicKey, caps: s.caps }) },
    };
    assert.match(expectError(await h().req('POST', '/v1/mandates', wrong), 403, 'mandate_violation'), /principal/);
    const bad = {
      ...s.body,
      signature: {
        signer: s.principal.publicKey,
        signature: s.principal.sign({ principal: s.principal.publicKey, caps: { ...s.caps, perEscrowMax: '11' } }),
      },
    };
    assert.match(expectError(await h().req('POST', '/v1/mandates', bad), 403, 'mandate_violation'), /verify/);
    expectError(
      await h().req('POST', '/v1/mandates', { principal: s.principal.publicKey, signature: s.body.signature }),
      400,
      'bad_request',
    );
    assert.match(
      expectError(await h().req('POST', '/v1/mandates', { ...s.body, caps: { ...s.caps, perEscrowMax: 10 } }), 400, 'bad_request'),
      /caps\.perEscrowMax/,
    );
    expectError(await h().req('GET', '/v1/mandates/mnd_01aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
  });

  test('every cap is enforced at escrow creation with 403 naming the cap', async () => {
    const s = await setup({ allowedCounterparties: [] });
    const m = (await h().req('POST', '/v1/mandates', s.body)).body;
    const stranger = await agent(h());
    assert.match(expectError(await create(m.id, stranger.id, s.payee.id, '1'), 403, 'mandate_violation'), /agent/);
    assert.match(expectError(await create(m.id, s.payer.id, s.payee.id, '10.000001'), 403, 'mandate_violation'), /perEscrowMax/);
    assert.match(
      expectError(
        await h().req('POST', '/v1/escrows', {
          amount: '1',
          asset: 'EURC',
          terms: PASSING_TERMS,
          payerAgentId: s.payer.id,
          payeeAgentId: s.payee.id,
          mandateId: m.id,
        }),
        403,
        'mandate_violation',
      ),
      /allowedAssets/,
    );
    assert.equal((await create(m.id, s.payer.id, s.payee.id, '10')).status, 201);
    assert.equal((await create(m.id, s.payer.id, s.payee.id, '10')).status, 201);
    assert.match(expectError(await create(m.id, s.payer.id, s.payee.id, '5.000001'), 403, 'mandate_violation'), /cumulativeMax/);
    assert.equal((await create(m.id, s.payer.id, s.payee.id, '5')).status, 201);

    const allow = await setup({ allowedCounterparties: ['b'.repeat(64)] });
    const m2 = (await h().req('POST', '/v1/mandates', allow.body)).body;
    assert.match(expectError(await create(m2.id, allow.payer.id, allow.payee.id, '1'), 403, 'mandate_violation'), /allowedCounterparties/);
    const expired = await setup({ expiresAt: '2001-01-01T00:00:00Z' });
    const m3 = (await h().req('POST', '/v1/mandates', expired.body)).body;
    assert.match(expectError(await create(m3.id, expired.payer.id, expired.payee.id, '1'), 403, 'mandate_violation'), /expire/);
  });

  test('usage counts open escrows fully and gives back what returns to the payer at close', async () => {
    const s = await setup();
    const m = (await h().req('POST', '/v1/mandates', s.body)).body;
    const a = (await create(m.id, s.payer.id, s.payee.id, '6')).body;
    const b = (await create(m.id, s.payer.id, s.payee.id, '7')).body;
    assert.equal(a.mandateId, m.id);
    assert.equal(a.mandateHash, m.hash);
    assert.deepEqual((await h().req('GET', `/v1/mandates/${m.id}`)).body.usage, { spent: '13', remaining: '12' });
    await h().req('POST', `/v1/escrows/${a.id}/fund`);
    const refund = await h().req('POST', `/v1/escrows/${a.id}/refund`);
    assert.equal(refund.body.mandateHash, m.hash);
    await h().req('POST', `/v1/escrows/${b.id}/fund`);
    await h().req('POST', `/v1/escrows/${b.id}/delivery`, { agentId: s.payee.id, payload: { title: 't' } });
    assert.deepEqual((await h().req('GET', `/v1/mandates/${m.id}`)).body.usage, { spent: '7', remaining: '18' });
  });
});
