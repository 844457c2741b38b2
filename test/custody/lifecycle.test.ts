// CUSTODY=chain end to end: funding locks the amount in the escrow contract, closing pays it out
// (release, refund, split), the proof carries the anchor inside its signed body, POST /v1/verify
// echoes it, the offline bundle carries it, and verifyAnchor checks it against the chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { failedDelivery, funded, settled, escrow } from '../fixtures.ts';
import { expectError } from '../harness.ts';
import { verifyAnchor, verifyBundle, verifyProof } from '@escrow-settlement/client';
import { escrowRefOf, payoutAddressOf } from '@escrow-settlement/protocol/chain/mapping';
import { readHold } from '../../src/custody/contract.ts';
import { chainHarness, describeChain, WEI } from './helpers.ts';

describeChain('chain custody lifecycle', (ctx) => {
  test('a released escrow locks at funding, pays the payee at closing, and its proof carries a verifiable anchor', async () => {
    const { chain, h } = ctx();
    const c = h.custody.contract;
    const e = await escrow(h, { amount: '2.5' });
    const payeeAddr = payoutAddressOf(e.payee.publicKey);
    const payerAddr = payoutAddressOf(e.payer.publicKey);
    const [c0, payee0, payer0] = [await chain.balance(c), await chain.balance(payeeAddr), await chain.balance(payerAddr)];

    const f = await h.req('POST', `/v1/escrows/${e.id}/fund`);
    assert.equal(f.status, 200, f.text);
    assert.equal(f.body.custody.status, 'locked');
    assert.equal(await chain.balance(c), c0 + WEI(2_500_000n), 'the contract holds the amount after funding');
    const hold = await readHold(chain.rpc, c, escrowRefOf(e.id));
    assert.equal(hold.state, 'locked');
    assert.equal(hold.payee, payeeAddr);

    const d = await h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'done' } });
    assert.equal(d.status, 201, d.text);
    const proof = d.body.proof;
    assert.deepEqual(Object.keys(proof.anchor).sort(), ['chain', 'contract', 'escrowRef', 'txHash']);
    assert.equal(proof.anchor.chain, 'eip155:1337');
    assert.equal(proof.anchor.contract, c);
    assert.equal(proof.anchor.escrowRef, escrowRefOf(e.id));
    assert.match(proof.anchor.txHash, /^0x[0-9a-f]{64}$/);
    assert.equal(verifyProof(proof).ok, true, 'the anchor is inside the signed body');
    assert.equal(verifyProof({ ...proof, anchor: { ...proof.anchor, txHash: '0x' + '0'.repeat(64) } }).ok, false);

    assert.equal(await chain.balance(c), c0, 'the contract paid out everything it held');
    assert.equal(await chain.balance(payeeAddr), payee0 + WEI(2_500_000n), 'the payee address received 2.5 × 10^18 wei');
    assert.equal(await chain.balance(payerAddr), payer0);
    assert.equal((await h.req('GET', `/v1/escrows/${e.id}/custody`)).body.status, 'confirmed');

    const v = await h.req('POST', '/v1/verify', proof);
    assert.equal(v.status, 200, v.text);
    assert.equal(v.body.valid, true);
    assert.deepEqual(v.body.anchor, proof.anchor);

    const bundle = (await h.req('GET', `/v1/proofs/${proof.id}/bundle`)).body;
    assert.deepEqual(bundle.proof.anchor, proof.anchor);
    assert.equal(verifyBundle(bundle, { trustedKeys: (await h.req('GET', '/.well-known/proof-issuer.json')).body.keys }).ok, true);

    const ok = await verifyAnchor(proof, { rpcUrl: chain.url });
    assert.equal(ok.ok, true, JSON.stringify(ok.checks));
    assert.deepEqual(
      ok.checks.map((x) => x.name),
      ['proof.signature', 'anchor.chain', 'anchor.escrowRef', 'anchor.receipt', 'anchor.payout'],
    );
  });

  test('verifyAnchor fails a tampered anchor on the signature and on the chain', async () => {
    const { chain, h } = ctx();
    const a = await settled(h, { amount: '1' });
    const b = await funded(h, { amount: '1' });
    const refunded = (await h.req('POST', `/v1/escrows/${b.id}/refund`)).body;
    const failing = async (anchor: Record<string, string>) => {
      const r = await verifyAnchor({ ...a.proof, anchor: { ...a.proof.anchor, ...anchor } }, { rpcUrl: chain.url });
      assert.equal(r.ok, false);
      return Object.fromEntries(r.checks.map((x) => [x.name, x.ok]));
    };
    // Another escrow's payout transaction: a real, successful call to the contract, for another ref.
    assert.deepEqual(await failing({ txHash: refunded.anchor.txHash }), {
      'proof.signature': false,
      'anchor.chain': true,
      'anchor.escrowRef': true,
      'anchor.receipt': false,
      'anchor.payout': true,
    });
    // Another escrow's ref: not keccak256(escrowId), and the contract paid it to other parties.
    assert.deepEqual(await failing({ escrowRef: refunded.anchor.escrowRef }), {
      'proof.signature': false,
      'anchor.chain': true,
      'anchor.escrowRef': false,
      'anchor.receipt': false,
      'anchor.payout': false,
    });
    // A contract that is not the escrow contract (an account with no code).
    assert.deepEqual(await failing({ contract: chain.accounts[5] }), {
      'proof.signature': false,
      'anchor.chain': true,
      'anchor.escrowRef': true,
      'anchor.receipt': false,
      'anchor.payout': false,
    });
    // A public chain id is never an anchor this service issues.
    assert.equal((await failing({ chain: 'eip155:1' }))['anchor.chain'], false);
    const none = await verifyAnchor({ ...a.proof, anchor: undefined }, { rpcUrl: chain.url });
    assert.deepEqual(
      none.checks.map((x) => [x.name, x.ok]),
      [['anchor.present', false]],
    );
    const down = await verifyAnchor(a.proof, { rpcUrl: 'http://127.0.0.1:1' });
    assert.equal(down.ok, false);
    assert.match(down.checks.find((x) => x.name === 'anchor.receipt')!.detail, /could not be checked: .*cannot reach/);
  });

  test("a refund pays the payer back and a split pays both by the ruling's shares (payee floor)", async () => {
    const { chain, h } = ctx();
    const r = await funded(h, { amount: '1.25' });
    const payerR = payoutAddressOf(r.payer.publicKey);
    const before = await chain.balance(payerR);
    const rp = await h.req('POST', `/v1/escrows/${r.id}/refund`);
    assert.equal(rp.status, 200, rp.text);
    assert.equal(rp.body.outcome, 'refunded');
    assert.equal(await chain.balance(payerR), before + WEI(1_250_000n));
    assert.equal((await verifyAnchor(rp.body, { rpcUrl: chain.url })).ok, true);

    const s = await failedDelivery(h, { amount: '3.333333' });
    await h.req('POST', `/v1/escrows/${s.id}/dispute`, { agentId: s.payer.id });
    const [payerS, payeeS] = [payoutAddressOf(s.payer.publicKey), payoutAddressOf(s.payee.publicKey)];
    const [p0, q0, c0] = [await chain.balance(payerS), await chain.balance(payeeS), await chain.balance(h.custody.contract)];
    const sp = await h.req('POST', `/v1/escrows/${s.id}/dispute/resolve`, {
      outcome: 'split',
      shares: { payerBps: 3000, payeeBps: 7000 },
      agentIds: [s.payer.id, s.payee.id],
    });
    assert.equal(sp.status, 200, sp.text);
    assert.equal(sp.body.proof.outcome, 'split');
    // payee floor(3333333 × 7000 / 10000) = 2333333 micro-units, payer the rest.
    assert.equal(await chain.balance(payeeS), q0 + WEI(2_333_333n));
    assert.equal(await chain.balance(payerS), p0 + WEI(1_000_000n));
    assert.equal(await chain.balance(h.custody.contract), c0 - WEI(3_333_333n));
    assert.equal((await verifyAnchor(sp.body.proof, { rpcUrl: chain.url })).ok, true);
  });

  test('the contract is deployed once per deployment: another instance on the same database uses it', async () => {
    const { chain, h } = ctx();
    const blocks = await chain.blockNumber();
    const other = await chainHarness(h.kind, chain, { db: h.db });
    assert.equal(other.custody.contract, h.custody.contract);
    assert.equal(await chain.blockNumber(), blocks, 'nothing was deployed');
    const rows = [...(await h.db.query('SELECT chain, address, operator FROM chain_contracts'))];
    assert.deepEqual(rows, [{ chain: 'eip155:1337', address: h.custody.contract, operator: chain.accounts[0] }]);
    // A matter funded through one instance closes through the other.
    const e = await funded(h, { amount: '0.5' });
    const p = await other.req('POST', `/v1/escrows/${e.id}/refund`);
    assert.equal(p.body.anchor.contract, h.custody.contract);
  });

  test('a lock the contract refuses leaves the escrow created (502 custody_failed), and funding again works', async () => {
    const { chain, h } = ctx();
    // Another dev account is not the contract's operator: the contract reverts its lock.
    const intruder = await chainHarness(h.kind, chain, { db: h.db, account: chain.accounts[1] }).catch((e) => e);
    assert.match(String(intruder.message), /CHAIN_ACCOUNT: the escrow contract 0x[0-9a-f]{40} is operated by/);
    const { createChainCustody } = await import('../../src/custody/chainCustody.ts');
    const wrong = createChainCustody({
      rpc: chain.rpc,
      chainId: 1337,
      contract: h.custody.contract,
      account: chain.accounts[1] as `0x${string}`,
      pollMs: 20,
      sandboxFault: async () => false,
    });
    const e = await escrow(h, { amount: '1' });
    const r = await wrong.lock!(h.db, {
      escrowId: e.id,
      reference: 'x',
      amount: 1_000_000n,
      asset: 'USDC',
      payer: e.payer.publicKey,
      payee: e.payee.publicKey,
    });
    assert.equal(r.ok, false);
    assert.match((r as { error: string }).error, /^lock transaction 0x[0-9a-f]{64} reverted \(NotOperator\)$/);
    const { createApp } = await import('../../src/app.ts');
    const app = createApp({ db: h.db, config: h.config, custody: wrong });
    const res = await app.fetch(new Request(`http://test.local/v1/escrows/${e.id}/fund`, { method: 'POST' }));
    const body = await res.json();
    assert.equal(res.status, 502);
    assert.equal(body.error.code, 'custody_failed');
    assert.match(body.error.message, /could not lock the funds .*NotOperator.*fund it again/);
    assert.equal((await h.req('GET', `/v1/escrows/${e.id}`)).body.state, 'created');
    assert.equal((await h.req('POST', `/v1/escrows/${e.id}/fund`)).status, 200);
    expectError(await h.req('GET', `/v1/escrows/${e.id}/custody`), 404, 'not_found');
  });
});
