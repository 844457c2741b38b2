// The shipped contract artefact is what contracts/Escrow.sol compiles to with the project's solc,
// and the encoding and mapping rules the adapter and verifyAnchor share behave as documented.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from '../process/proc.ts';
import { ESCROW_ABI, ESCROW_BYTECODE } from '../../src/custody/escrowContract.gen.ts';
import { encodeCall, keccakHex, revertReason, selector, strip, words } from '@escrow-settlement/protocol/chain/abi';
import { ERRORS, SIG } from '../../src/custody/contract.ts';
import { caip2, escrowRefOf, payoutAddressOf, proofPayoutWei, WEI_PER_MICRO } from '@escrow-settlement/protocol/chain/mapping';
import { createRpc, RpcError } from '@escrow-settlement/protocol/chain/rpc';
import { needsChainTools } from '../chain/tools.ts';

test('the committed escrowContract.gen.ts equals contracts/Escrow.sol compiled now with solc', {
  timeout: 120_000,
  ...needsChainTools('solc'),
}, async () => {
  const r = await run(['scripts/compile-contract.mjs', '--check']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /matches contracts\/Escrow\.sol/);
  assert.match(ESCROW_BYTECODE, /^0x[0-9a-f]+$/);
});

/** scripts/compile-contract.mjs, loaded by a specifier the type checker does not follow (it is plain JavaScript). */
async function generator(): Promise<{ render(a: object): string; compile(): { abi: unknown[] } }> {
  const spec: string = '../../scripts/compile-contract.mjs';
  return import(spec);
}

test("the generator's short form of an ABI reads back as the ABI itself, solc's odd parameters included", async () => {
  const abi = [
    { inputs: [], stateMutability: 'nonpayable', type: 'constructor' },
    { inputs: [{ internalType: 'bytes32', name: 'escrowRef', type: 'bytes32' }], name: 'NotLocked', type: 'error' },
    {
      anonymous: false,
      inputs: [
        { indexed: true, internalType: 'bytes32', name: 'escrowRef', type: 'bytes32' },
        { indexed: false, internalType: 'contract IERC20', name: 'token', type: 'address' },
      ],
      name: 'Locked',
      type: 'event',
    },
    {
      inputs: [
        {
          components: [{ internalType: 'uint256', name: 'amount', type: 'uint256' }],
          internalType: 'struct Hold',
          name: 'hold',
          type: 'tuple',
        },
      ],
      name: 'put',
      outputs: [{ internalType: 'address', name: '', type: 'address' }],
      stateMutability: 'payable',
      type: 'function',
    },
  ];
  const text = (await generator()).render({ sourceSha256: '00', solcVersion: 'x', abi, bytecode: '0x00' });
  const dir = mkdtempSync(join(tmpdir(), 'escrow-abi-'));
  try {
    writeFileSync(join(dir, 'abi.gen.ts'), text);
    const written = await import(pathToFileURL(join(dir, 'abi.gen.ts')).href);
    assert.deepEqual(written.ESCROW_ABI, abi);
    assert.match(text, /p\("bytes32", "escrowRef", true\)/, 'an elementary parameter is written short');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the shipped ABI is, value for value, the ABI solc gives for contracts/Escrow.sol now', {
  timeout: 120_000,
  ...needsChainTools('solc'),
}, async () => {
  assert.deepEqual(ESCROW_ABI, (await generator()).compile().abi);
});

test('every function, event and error the adapter uses is in the shipped ABI', () => {
  const sigs = new Set(ESCROW_ABI.filter((x) => 'name' in x).map((x: any) => `${x.name}(${x.inputs.map((i: any) => i.type).join(',')})`));
  for (const s of [...Object.values(SIG), ...ERRORS]) assert.ok(sigs.has(s), s);
});

test("keccak-256, selectors and static ABI words match Ethereum's published values", () => {
  assert.equal(keccakHex(''), '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  assert.equal(selector('transfer(address,uint256)'), '0xa9059cbb');
  assert.equal(
    encodeCall('transfer(address,uint256)', [{ address: '0x' + 'AB'.repeat(20) }, { uint: 1n }]),
    '0xa9059cbb' + '0'.repeat(24) + 'ab'.repeat(20) + '0'.repeat(63) + '1',
  );
  assert.throws(() => encodeCall('f(uint256)', [{ uint: -1n }]), RangeError);
  assert.throws(() => encodeCall('f(bytes32)', [{ bytes32: '0x12' }]), /bytes32 must be 32 bytes/);
  assert.throws(() => strip('12', 'x'), /x must be 0x-prefixed hex/);
  assert.throws(() => words('0x1234'), /not a whole number of 32-byte words/);
  // Error(string) "nope": selector, offset 0x20, length 4, data.
  const err =
    '0x08c379a0' + (32).toString(16).padStart(64, '0') + '4'.padStart(64, '0') + Buffer.from('nope').toString('hex').padEnd(64, '0');
  assert.equal(revertReason(err, ERRORS), 'nope');
  assert.equal(revertReason(selector('NotLocked(bytes32)') + '00'.repeat(32), ERRORS), 'NotLocked');
  assert.equal(revertReason('0x', ERRORS), undefined);
});

test('mapping: escrowRef = keccak256(escrow id), payout address = last 20 bytes of keccak256(key), 10^12 wei per micro-unit', () => {
  assert.equal(escrowRefOf('esc_x'), keccakHex(new TextEncoder().encode('esc_x')));
  const key = '11'.repeat(32);
  assert.equal(payoutAddressOf(key), '0x' + keccakHex(Buffer.from(key, 'hex')).slice(-40));
  assert.throws(() => payoutAddressOf('11'), /32 bytes/);
  assert.equal(WEI_PER_MICRO * 1_000_000n, 10n ** 18n, 'one whole unit is one ether');
  assert.equal(caip2(31337), 'eip155:31337');
  assert.deepEqual(proofPayoutWei({ amount: '1.5', outcome: 'released' }), { payer: 0n, payee: 15n * 10n ** 17n });
  assert.deepEqual(proofPayoutWei({ amount: '1.5', outcome: 'refunded' }), { payer: 15n * 10n ** 17n, payee: 0n });
  assert.deepEqual(proofPayoutWei({ amount: '0.000003', outcome: 'split', shares: { payerBps: 5000, payeeBps: 5000 } }), {
    payer: 2n * WEI_PER_MICRO,
    payee: WEI_PER_MICRO,
  });
  assert.throws(() => proofPayoutWei({ amount: '1e3', outcome: 'released' }), /proof.amount is not an amount/);
});

test('the JSON-RPC client reports node errors, non-JSON answers and missing results by method', async () => {
  const answer = (status: number, body: string) => createRpc('http://node', { fetch: async () => new Response(body, { status }) });
  await assert.rejects(
    answer(200, '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom","data":"0x12"}}').call('eth_x'),
    (e: unknown) => e instanceof RpcError && e.code === -32000 && e.data === '0x12' && e.message === 'eth_x: boom',
  );
  await assert.rejects(answer(502, 'bad gateway').call('eth_x'), /eth_x: HTTP 502: the answer is not JSON-RPC/);
  await assert.rejects(answer(200, '{"jsonrpc":"2.0","id":1}').call('eth_x'), /eth_x: HTTP 200: the answer has no result/);
  assert.equal(await answer(200, '{"jsonrpc":"2.0","id":1,"result":"0x1"}').call('eth_x'), '0x1');
});
