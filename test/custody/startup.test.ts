// Starting with CUSTODY=chain as operators do: a real process, a real ganache. Anything but a local
// development chain is refused with one line naming CHAIN_RPC_URL; a dev chain runs a matter to an anchored proof.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, startService, TSX } from '../process/proc.ts';
import { parseConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { openStore } from '../harness.ts';
import { connectChainCustody, probeChain } from '../../src/custody/connect.ts';
import { NEEDS_GANACHE, startChain, type Chain } from './helpers.ts';

let mainnetLike: Chain;
let dev: Chain;
before(async () => {
  if (NEEDS_GANACHE.skip) return;
  [mainnetLike, dev] = await Promise.all([startChain(1), startChain(31337)]);
});
after(async () => {
  await Promise.all([mainnetLike?.close(), dev?.close()]);
});

const lines = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => l && !l.startsWith('npm warn'));

test('CUSTODY=chain against a chain with id 1 exits 1 with one line naming CHAIN_RPC_URL', NEEDS_GANACHE, async () => {
  const r = await run(TSX, { CUSTODY: 'chain', CHAIN_RPC_URL: mainnetLike.url, DATA_DIR: ':memory:', PORT: '0' });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(lines(r.stderr).length, 1, r.stderr);
  assert.match(
    r.stderr,
    /^escrow-settlement: bad configuration: CHAIN_RPC_URL: chain id 1 is not a local development chain \(accepted: 31337, 1337\)/,
  );
});

test('CUSTODY=chain with an unreachable CHAIN_RPC_URL, or without one, stops start-up naming it', async () => {
  const r = await run(TSX, { CUSTODY: 'chain', CHAIN_RPC_URL: 'http://127.0.0.1:1', DATA_DIR: ':memory:' });
  assert.equal(r.code, 1);
  assert.equal(lines(r.stderr).length, 1, r.stderr);
  assert.match(r.stderr, /CHAIN_RPC_URL: cannot read the chain id/);
  const m = await run(TSX, { CUSTODY: 'chain', DATA_DIR: ':memory:' });
  assert.equal(m.code, 1);
  assert.match(m.stderr, /CHAIN_RPC_URL: is required with CUSTODY=chain/);
});

test('CUSTODY=chain on a dev chain (31337) deploys the contract and closes a matter in an anchored proof', {
  timeout: 120_000,
  ...NEEDS_GANACHE,
}, async () => {
  const s = await startService(TSX, { CUSTODY: 'chain', CHAIN_RPC_URL: dev.url, DATA_DIR: ':memory:' });
  try {
    assert.match(s.stderr(), /"msg":"chain custody","chain":"eip155:31337","contract":"0x[0-9a-f]{40}"/);
    const post = async (path: string, body?: unknown) =>
      (await fetch(`${s.url}${path}`, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) })).json();
    const payer = await post('/v1/agents', { label: 'payer' });
    const payee = await post('/v1/agents', { label: 'payee' });
    const e = await post('/v1/escrows', {
      amount: '3',
      asset: 'USDC',
      payerAgentId: payer.id,
      payeeAgentId: payee.id,
      terms: { description: 'x', checks: [] },
    });
    assert.equal((await post(`/v1/escrows/${e.id}/fund`)).state, 'funded');
    const d = await post(`/v1/escrows/${e.id}/delivery`, { agentId: payee.id, payload: { title: 't' } });
    assert.equal(d.proof.anchor.chain, 'eip155:31337');
    assert.equal((await post('/v1/verify', d.proof)).anchor.txHash, d.proof.anchor.txHash);
  } finally {
    assert.equal(await s.stop(), 0, s.stderr());
  }
});

test('configuration: CUSTODY, CHAIN_RPC_URL, CHAIN_ACCOUNT and CHAIN_CONFIRM_TIMEOUT_MS are checked, naming the variable', () => {
  const c = parseConfig({});
  assert.equal(c.custody, 'simulated', 'the simulated rails stay the default');
  assert.equal(c.chainRpcUrl, undefined);
  const chain = parseConfig({ CUSTODY: 'chain', CHAIN_RPC_URL: 'http://127.0.0.1:8545', CHAIN_ACCOUNT: '0x' + 'aB'.repeat(20) });
  assert.equal(chain.custody, 'chain');
  assert.equal(chain.chainAccount, '0x' + 'aB'.repeat(20));
  assert.equal(chain.chainConfirmTimeoutMs, 30_000);
  const bad: Array<[Record<string, string>, string]> = [
    [{ CUSTODY: 'ledger' }, 'CUSTODY'],
    [{ CUSTODY: 'chain' }, 'CHAIN_RPC_URL'],
    [{ CUSTODY: 'chain', CHAIN_RPC_URL: 'ws://127.0.0.1:8545' }, 'CHAIN_RPC_URL'],
    [{ CUSTODY: 'chain', CHAIN_RPC_URL: 'not a url' }, 'CHAIN_RPC_URL'],
    [{ CUSTODY: 'chain', CHAIN_RPC_URL: 'http://127.0.0.1:8545', CHAIN_ACCOUNT: '0x123' }, 'CHAIN_ACCOUNT'],
    [{ CHAIN_CONFIRM_TIMEOUT_MS: '5' }, 'CHAIN_CONFIRM_TIMEOUT_MS'],
  ];
  for (const [env, variable] of bad) {
    assert.throws(
      () => parseConfig(env),
      (e: unknown) => e instanceof ConfigError && e.variable === variable && e.message.startsWith(`${variable}: `),
      JSON.stringify(env),
    );
  }
});

test('an account the node does not hold unlocked, and a recorded contract missing from the chain, are refused', NEEDS_GANACHE, async () => {
  await assert.rejects(
    probeChain({ rpcUrl: dev.url, account: '0x' + '12'.repeat(20) }),
    (e: unknown) => e instanceof ConfigError && e.variable === 'CHAIN_ACCOUNT',
  );
  const probe = await probeChain({ rpcUrl: dev.url, account: dev.accounts[2].toUpperCase().replace('0X', '0x') });
  assert.equal(probe.account, dev.accounts[2]);
  assert.equal(probe.chainId, 31337);
  const store = await openStore('pglite');
  try {
    await store.db.query(
      `INSERT INTO chain_contracts (chain, address, operator, deploy_tx, source_sha256) VALUES ('eip155:31337', $1, $2, $3, 'x')`,
      ['0x' + '34'.repeat(20), dev.accounts[0], '0x' + '00'.repeat(32)],
    );
    await assert.rejects(
      connectChainCustody(store.db, { rpcUrl: dev.url, sandboxFault: async () => false }),
      /CHAIN_RPC_URL: the escrow contract 0x3434.* has no code there \(was the dev chain reset\?\)/,
    );
  } finally {
    await store.drop();
  }
});
