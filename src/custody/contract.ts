// The SettlementEscrow contract (contracts/Escrow.sol) over JSON-RPC: calldata, the hold view,
// sending a transaction from the unlocked dev account and waiting (bounded) for its receipt.
import { encodeCall, eventTopic, revertReason, words, wordToAddress, type Hex } from '@escrow-settlement/protocol/chain/abi';
import { RpcError, type Rpc } from '@escrow-settlement/protocol/chain/rpc';
import { readHold, SIG, type Hold, type Receipt } from '@escrow-settlement/protocol/chain/hold';

export { readHold, SIG, type Hold, type Receipt };

export const ERRORS = [
  'NotOperator(address)',
  'ZeroAmount()',
  'AlreadyLocked(bytes32)',
  'NotLocked(bytes32)',
  'AmountMismatch(bytes32,uint256,uint256)',
  'TransferFailed(address,uint256)',
] as const;

export const PAID_TOPIC = eventTopic(SIG.Paid);

/** Gas limits sent explicitly, so a reverting call is mined (status 0) rather than refused at estimation. */
export const GAS = { deploy: 1_500_000n, lock: 200_000n, settle: 300_000n } as const;

export const hex = (n: bigint | number): Hex => `0x${n.toString(16)}`;

export async function readOperator(rpc: Rpc, contract: string): Promise<Hex> {
  const out = await rpc.call<string>('eth_call', [{ to: contract, data: encodeCall(SIG.operator) }, 'latest']);
  const w = words(out, 'operator result');
  if (w.length !== 1) throw new TypeError(`operator() returned ${w.length} words, expected 1`);
  return wordToAddress(w[0]);
}

export interface TxRequest {
  from: string;
  to?: string;
  data: string;
  value?: bigint;
  gas: bigint;
}

export interface Sent {
  hash: Hex;
  /** null when the transaction was not mined within the time limit. */
  receipt: Receipt | null;
}

export interface WaitOptions {
  confirmTimeoutMs: number;
  pollMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** eth_sendTransaction from an unlocked account, then eth_getTransactionReceipt until mined or the time limit passes. */
export async function sendAndWait(rpc: Rpc, tx: TxRequest, wait: WaitOptions): Promise<Sent> {
  const hash = await rpc.call<Hex>('eth_sendTransaction', [
    {
      from: tx.from,
      ...(tx.to ? { to: tx.to } : {}),
      data: tx.data,
      gas: hex(tx.gas),
      ...(tx.value ? { value: hex(tx.value) } : {}),
    },
  ]);
  return { hash, receipt: await waitReceipt(rpc, hash, wait) };
}

export async function waitReceipt(rpc: Rpc, hash: string, { confirmTimeoutMs, pollMs }: WaitOptions): Promise<Receipt | null> {
  const deadline = Date.now() + confirmTimeoutMs;
  for (;;) {
    const receipt = await rpc.call<Receipt | null>('eth_getTransactionReceipt', [hash]);
    if (receipt) return receipt;
    if (Date.now() >= deadline) return null;
    await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())));
  }
}

/** Why a mined transaction reverted: replays it with eth_call on the state before its block. Best effort. */
export async function whyReverted(rpc: Rpc, tx: TxRequest, receipt: Receipt): Promise<string | undefined> {
  const before = BigInt(receipt.blockNumber) - 1n;
  try {
    await rpc.call('eth_call', [
      { from: tx.from, to: tx.to, data: tx.data, gas: hex(tx.gas), ...(tx.value ? { value: hex(tx.value) } : {}) },
      hex(before < 0n ? 0n : before),
    ]);
    return undefined;
  } catch (err) {
    if (!(err instanceof RpcError)) return undefined;
    const d = err.data as unknown;
    const data = typeof d === 'string' ? d : typeof (d as { data?: unknown })?.data === 'string' ? (d as { data: string }).data : undefined;
    return revertReason(data, ERRORS) ?? undefined;
  }
}

/** The transaction that paid out escrowRef: its Paid event in the block the contract recorded. */
export async function findPaidTx(rpc: Rpc, contract: string, escrowRef: string, block: bigint): Promise<Hex | null> {
  const logs = await rpc.call<Array<{ transactionHash: Hex; removed?: boolean }>>('eth_getLogs', [
    {
      address: contract,
      topics: [PAID_TOPIC, escrowRef],
      fromBlock: hex(block),
      toBlock: hex(block),
    },
  ]);
  const live = logs.filter((l) => !l.removed);
  return live.length ? live[0].transactionHash : null;
}
