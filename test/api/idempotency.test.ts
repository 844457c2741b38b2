import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError } from '../harness.ts';
import { agent, PASSING_TERMS } from '../fixtures.ts';

describeStores('Idempotency-Key', (h) => {
  test('a retried create with the same key replays the first response verbatim and creates nothing new', async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    const body = { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id };
    const first = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'order-1' });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const second = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'order-1' });
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.text, first.text);
    const list = (await h().req('GET', '/v1/escrows')).body.escrows.filter((e: any) => e.payer.publicKey === payer.publicKey);
    assert.equal(list.length, 1);
    // Same key, different body: 422.
    assert.match(
      expectError(await h().req('POST', '/v1/escrows', { ...body, amount: '4' }, { 'idempotency-key': 'order-1' }), 422, 'unprocessable'),
      /different request body/,
    );
    // Another key creates another escrow.
    assert.notEqual((await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'order-2' })).body.id, first.body.id);
  });

  test('a failed request does not hold its key: the corrected retry runs', async () => {
    const payer = await agent(h());
    const body = {
      amount: '3',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payeeAgentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa',
    };
    expectError(await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'k-fail' }), 404, 'not_found');
    const payee = await agent(h());
    // A different body under the same key is fine now: the failed attempt stored nothing.
    const ok = await h().req('POST', '/v1/escrows', { ...body, payeeAgentId: payee.id }, { 'idempotency-key': 'k-fail' });
    assert.equal(ok.status, 201, ok.text);
  });

  test('fund replays under its key instead of answering 409 the second time', async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    const e = (
      await h().req('POST', '/v1/escrows', {
        amount: '3',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      })
    ).body;
    const a = await h().req('POST', `/v1/escrows/${e.id}/fund`, undefined, { 'idempotency-key': 'fund-1' });
    const b = await h().req('POST', `/v1/escrows/${e.id}/fund`, undefined, { 'idempotency-key': 'fund-1' });
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(b.text, a.text);
    assert.equal(b.headers.get('idempotent-replayed'), 'true');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/fund`), 409, 'invalid_state');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/fund`, undefined, { 'idempotency-key': 'x'.repeat(256) }), 400, 'bad_request');
  });

  test('ten concurrent creates with one key make one escrow and all answer with it', async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    const body = { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id };
    const all = await Promise.all(Array.from({ length: 10 }, () => h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'burst' })));
    for (const r of all) assert.equal(r.status, 201, r.text);
    assert.equal(new Set(all.map((r) => r.body.id)).size, 1);
    const list = (await h().req('GET', '/v1/escrows')).body.escrows.filter((e: any) => e.payer.publicKey === payer.publicKey);
    assert.equal(list.length, 1);
  });
});

describeStores('Idempotency-Key retention', (h) => {
  test('records past 24 hours are pruned in bounded batches and the key can be used afresh', async () => {
    const { pruneIdempotency } = await import('../../src/db/idempotency.ts');
    const payer = await agent(h());
    const payee = await agent(h());
    const body = { amount: '3', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id };
    const first = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'old-key' });
    await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'fresh-key' });
    await h().db.query(`UPDATE idempotency SET created_at = now() - interval '25 hours' WHERE scope LIKE '%old-key'`);
    assert.equal(await pruneIdempotency(h().db), 1);
    assert.equal(await pruneIdempotency(h().db), 0);
    const again = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'old-key' });
    assert.equal(again.status, 201);
    assert.notEqual(again.body.id, first.body.id, 'after retention the key no longer replays');
    const replay = await h().req('POST', '/v1/escrows', body, { 'idempotency-key': 'fresh-key' });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  });
});
