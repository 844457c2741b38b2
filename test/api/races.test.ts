// Concurrency properties on real Postgres: two app instances on two pools, as two processes would be.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PG_URL, twoInstances } from '../harness.ts';
import { agent, clientKey, PASSING_TERMS } from '../fixtures.ts';

test('twenty concurrent creations against a cumulative cap that fits ten give exactly ten escrows (two instances)', {
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const { a, b, close } = await twoInstances('race');
  try {
    const principal = clientKey();
    const payer = await agent(a);
    const payee = await agent(a);
    const caps = {
      agent: payer.publicKey,
      perEscrowMax: '1',
      cumulativeMax: '10',
      allowedAssets: ['USDC'],
      expiresAt: '2099-01-01T00:00:00Z',
    };
    const m = (
      await a.req('POST', '/v1/mandates', {
        principal: principal.publicKey,
        caps,
        signature: { signer: principal.publicKey, signature: principal.sign({ principal: principal.publicKey, caps }) },
      })
    ).body;
    const body = { amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id, mandateId: m.id };
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).req('POST', '/v1/escrows', body)));
    const codes = results.map((r) => r.status).sort();
    assert.equal(codes.filter((c) => c === 201).length, 10, JSON.stringify(codes));
    assert.equal(codes.filter((c) => c === 403).length, 10);
    assert.deepEqual((await b.req('GET', `/v1/mandates/${m.id}`)).body.usage, { spent: '10', remaining: '0' });
  } finally {
    await close();
  }
});

test('ten concurrent creates with one Idempotency-Key across two instances create one escrow', {
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const { a, b, db, close } = await twoInstances('idem');
  try {
    const payer = await agent(a);
    const payee = await agent(a);
    const body = { amount: '2', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id };
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).req('POST', '/v1/escrows', body, { 'idempotency-key': 'same' })),
    );
    for (const r of results) assert.equal(r.status, 201, r.text);
    assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
    assert.equal(results.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 9);
    const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM escrows WHERE payer_key = $1`, [payer.publicKey]);
    assert.equal(n, 1);
  } finally {
    await close();
  }
});

test('concurrent deliveries and refunds on one escrow have exactly one effect (two instances)', {
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const { a, b, db, close } = await twoInstances('once');
  try {
    const payer = await agent(a);
    const payee = await agent(a);
    const e = (
      await a.req('POST', '/v1/escrows', {
        amount: '2',
        asset: 'USDC',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
      })
    ).body;
    await a.req('POST', `/v1/escrows/${e.id}/fund`);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2
          ? (i % 4 === 1 ? a : b).req('POST', `/v1/escrows/${e.id}/refund`)
          : (i % 4 === 0 ? a : b).req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 't' } }),
      ),
    );
    const winners = results.filter((r) => r.status === 200 || r.status === 201);
    assert.equal(winners.length, 1, results.map((r) => r.status).join(','));
    for (const r of results) if (r !== winners[0]) assert.equal(r.status, 409);
    const [{ n }] = await db.query('SELECT count(*)::int AS n FROM proofs WHERE escrow_id = $1', [e.id]);
    assert.equal(n, 1);
    const [{ size }] = await db.query('SELECT size::int AS size FROM log_state');
    const [{ proofs }] = await db.query('SELECT count(*)::int AS proofs FROM proofs');
    assert.equal(size, proofs);
  } finally {
    await close();
  }
});
