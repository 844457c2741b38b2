// Chain custody failures on the existing custody journal: a reverted or unconfirmed payout is
// settle-failed with the error journaled; a retry reads the chain first and never pays twice,
// including when a payout was mined but the closing's database transaction never committed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escrow, funded } from '../fixtures.ts';
import { expectError } from '../harness.ts';
import { verifyAnchor } from '@escrow-settlement/client';
import { payoutAddressOf, escrowRefOf } from '@escrow-settlement/protocol/chain/mapping';
import { findPaidTx, readHold } from '../../src/custody/contract.ts';
import { sweepOnce } from '../../src/jobs/sweep.ts';
import { chainHarness, crashAfterChain, describeChain, WEI } from './helpers.ts';

describeChain('chain custody failures', (ctx) => {
  test('a payout that reverts on chain is settle-failed with the transaction journaled; the retry pays exactly once', async () => {
    const { chain, h } = ctx();
    const e = await funded(h, { amount: '1.5' });
    const payer = payoutAddressOf(e.payer.publicKey);
    const before = await chain.balance(payer);
    // The sandbox fault makes the adapter send a real payout for a ref with no lock: the contract reverts it.
    assert.equal((await h.req('POST', '/v1/sandbox/custody/fail-next', { count: 1 })).status, 200);
    const msg = expectError(await h.req('POST', `/v1/escrows/${e.id}/refund`), 502, 'custody_failed');
    assert.match(msg, /payout transaction 0x[0-9a-f]{64} reverted \(NotLocked\) \[sandbox fail-next\]/);
    const j = (await h.req('GET', `/v1/escrows/${e.id}/custody`)).body;
    assert.equal(j.status, 'settle-failed');
    assert.equal(j.attempts, 1);
    const reverted = /0x[0-9a-f]{64}/.exec(j.lastError)![0];
    const receipt = await chain.rpc.call<{ status: string; to: string }>('eth_getTransactionReceipt', [reverted]);
    assert.equal(receipt.status, '0x0', 'the failed attempt is a mined, reverted transaction');
    assert.equal(receipt.to, h.custody.contract);
    assert.equal((await h.req('GET', `/v1/escrows/${e.id}`)).body.custody.status, 'settle-failed');
    assert.equal(await chain.balance(payer), before);

    const p = await h.req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.outcome, 'refunded');
    assert.notEqual(p.body.anchor.txHash, reverted);
    assert.equal(await chain.balance(payer), before + WEI(1_500_000n));
    assert.equal((await verifyAnchor(p.body, { rpcUrl: chain.url })).ok, true);
    const blocks = await chain.blockNumber();
    const again = await h.req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.deepEqual(again.body, p.body);
    assert.equal(await chain.blockNumber(), blocks, 'a retry of a confirmed settlement sends nothing');
    assert.equal(await chain.balance(payer), before + WEI(1_500_000n));
  });

  test('a payout not mined in time is settle-failed; once it is mined, the retry confirms it without sending again', async () => {
    const { chain, h } = ctx();
    const quick = await chainHarness(h.kind, chain, { db: h.db, confirmTimeoutMs: 300 });
    const e = await funded(quick, { amount: '0.75' });
    const payee = payoutAddressOf(e.payee.publicKey);
    const before = await chain.balance(payee);
    await chain.rpc.call('miner_stop');
    let pending: string;
    try {
      const d = await quick.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'slow chain' } });
      assert.equal(d.status, 201, d.text);
      assert.equal(d.body.proof, undefined);
      const j = (await quick.req('GET', `/v1/escrows/${e.id}/custody`)).body;
      assert.equal(j.status, 'settle-failed');
      assert.match(
        j.lastError,
        /^payout transaction 0x[0-9a-f]{64} not confirmed within 300 ms; a retry reads the chain before sending again$/,
      );
      pending = /0x[0-9a-f]{64}/.exec(j.lastError)![0];
    } finally {
      await chain.rpc.call('miner_start');
    }
    for (let i = 0; i < 100 && !(await chain.rpc.call('eth_getTransactionReceipt', [pending])); i++)
      await new Promise((r) => setTimeout(r, 20));
    const blocks = await chain.blockNumber();
    const p = await quick.req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.anchor.txHash, pending, 'the proof anchors the payout that was already mined');
    assert.equal(await chain.blockNumber(), blocks, 'the retry sent no transaction');
    assert.equal(await chain.balance(payee), before + WEI(750_000n));
    assert.equal((await verifyAnchor(p.body, { rpcUrl: chain.url })).ok, true);
  });

  test('a payout mined before the closing transaction failed is confirmed by the next retry, never sent twice', async () => {
    const { chain, h } = ctx();
    const crash = crashAfterChain(h.custody);
    const flaky = await chainHarness(h.kind, chain, { db: h.db, wrap: () => crash.adapter });
    const e = await funded(flaky, { amount: '2' });
    const payer = payoutAddressOf(e.payer.publicKey);
    const before = await chain.balance(payer);
    await flaky.req('POST', '/v1/sandbox/custody/fail-next', { count: 1 });
    expectError(await flaky.req('POST', `/v1/escrows/${e.id}/refund`), 502, 'custody_failed');

    // The retry's payout is mined, then its database transaction dies: the journal rolls back to settle-failed.
    crash.armed.settle = true;
    expectError(await flaky.req('POST', `/v1/escrows/${e.id}/custody/retry`), 500, 'internal');
    const j = (await flaky.req('GET', `/v1/escrows/${e.id}/custody`)).body;
    assert.equal(j.status, 'settle-failed', 'the database knows nothing of the payout');
    assert.equal(j.attempts, 1);
    assert.equal(await chain.balance(payer), before + WEI(2_000_000n), 'but the chain paid');
    const hold = await readHold(chain.rpc, h.custody.contract, escrowRefOf(e.id));
    const paidBy = await findPaidTx(chain.rpc, h.custody.contract, escrowRefOf(e.id), hold.settledBlock);

    const blocks = await chain.blockNumber();
    const p = await flaky.req('POST', `/v1/escrows/${e.id}/custody/retry`);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.anchor.txHash, paidBy);
    assert.equal(await chain.blockNumber(), blocks, 'no second payout was sent');
    assert.equal(await chain.balance(payer), before + WEI(2_000_000n));
    assert.equal((await flaky.req('GET', `/v1/escrows/${e.id}/custody`)).body.status, 'confirmed');
  });

  test('a closing lost after its payout (no journal at all) is finished by the sweep from the chain, without a second payout', async () => {
    const { chain, h } = ctx();
    const crash = crashAfterChain(h.custody);
    const flaky = await chainHarness(h.kind, chain, { db: h.db, wrap: () => crash.adapter });
    const e = await funded(flaky, { amount: '1', timeouts: { deliverWithinSeconds: 60 } });
    const payer = payoutAddressOf(e.payer.publicKey);
    const before = await chain.balance(payer);
    crash.armed.settle = true;
    expectError(await flaky.req('POST', `/v1/escrows/${e.id}/refund`), 500, 'internal');
    assert.equal((await flaky.req('GET', `/v1/escrows/${e.id}`)).body.state, 'funded', 'the refund never committed');
    expectError(await flaky.req('GET', `/v1/escrows/${e.id}/custody`), 404, 'not_found');
    assert.equal(await chain.balance(payer), before + WEI(1_000_000n));

    const blocks = await chain.blockNumber();
    await flaky.req('POST', '/v1/sandbox/clock', { advanceSeconds: 61 });
    const swept = await sweepOnce(flaky.app.svc);
    assert.equal(swept.closed >= 1, true, JSON.stringify(swept));
    const proof = (await flaky.req('GET', `/v1/escrows/${e.id}/proof`)).body;
    assert.equal(proof.outcome, 'refunded');
    assert.equal(await chain.blockNumber(), blocks, 'the sweep confirmed from the chain and sent nothing');
    assert.equal(await chain.balance(payer), before + WEI(1_000_000n));
    assert.equal((await verifyAnchor(proof, { rpcUrl: chain.url })).ok, true);
  });

  test('a lock mined before the funding transaction failed is reused when the escrow is funded again', async () => {
    const { chain, h } = ctx();
    const crash = crashAfterChain(h.custody);
    const flaky = await chainHarness(h.kind, chain, { db: h.db, wrap: () => crash.adapter });
    const e = await escrow(flaky, { amount: '0.5' });
    const c0 = await chain.balance(h.custody.contract);
    crash.armed.lock = true;
    expectError(await flaky.req('POST', `/v1/escrows/${e.id}/fund`), 500, 'internal');
    assert.equal((await flaky.req('GET', `/v1/escrows/${e.id}`)).body.state, 'created');
    assert.equal(await chain.balance(h.custody.contract), c0 + WEI(500_000n));
    const blocks = await chain.blockNumber();
    assert.equal((await flaky.req('POST', `/v1/escrows/${e.id}/fund`)).status, 200);
    assert.equal(await chain.blockNumber(), blocks, 'the existing lock was reused');
    assert.equal(await chain.balance(h.custody.contract), c0 + WEI(500_000n));
    const p = await flaky.req('POST', `/v1/escrows/${e.id}/refund`);
    assert.equal(p.status, 200, p.text);
    assert.equal(await chain.balance(h.custody.contract), c0);
  });

  test('custody that cannot reach the chain, or finds no lock, is settle-failed with the reason', async () => {
    const { chain, h } = ctx();
    const { createChainCustody } = await import('../../src/custody/chainCustody.ts');
    const { createRpc } = await import('@escrow-settlement/protocol/chain/rpc');
    const down = createChainCustody({
      rpc: createRpc('http://127.0.0.1:1'),
      chainId: 1337,
      contract: h.custody.contract,
      account: chain.accounts[0] as `0x${string}`,
      sandboxFault: async () => false,
    });
    const req = {
      escrowId: 'esc_01aaaaaaaaaaaaaaaaaaaaaaaa',
      reference: 'cst_x',
      outcome: 'refunded' as const,
      payerAmount: 1n,
      payeeAmount: 0n,
      asset: 'USDC',
    };
    const r1 = await down.settle(h.db, req);
    assert.equal(r1.ok, false);
    assert.match((r1 as { error: string }).error, /^chain custody: eth_call: cannot reach the chain RPC/);
    const r2 = await h.custody.settle(h.db, req);
    assert.match((r2 as { error: string }).error, /holds no lock on chain/);
    const held = await funded(h, { amount: '1' });
    const r5 = await h.custody.settle(h.db, { ...req, escrowId: held.id, payerAmount: 2n });
    assert.match((r5 as { error: string }).error, /holds 1000000000000000000 wei but the closing pays 2000000000000 wei/);
    // A hold paid with other amounts is never paid again, and never confirmed as this closing.
    const e = await funded(h, { amount: '1' });
    await h.req('POST', `/v1/escrows/${e.id}/refund`);
    const r3 = await h.custody.settle(h.db, { ...req, escrowId: e.id, outcome: 'released', payerAmount: 0n, payeeAmount: 1_000_000n });
    assert.match((r3 as { error: string }).error, /already paid out on chain with other amounts/);
    const r4 = await h.custody.lock!(h.db, {
      escrowId: e.id,
      reference: 'x',
      amount: 2n,
      asset: 'USDC',
      payer: e.payer.publicKey,
      payee: e.payee.publicKey,
    });
    assert.match((r4 as { error: string }).error, /already holds another lock on chain/);
  });
});
