// The read side of the service's SettlementEscrow contract that an auditor needs to check a
// proof's anchor: the function and event signatures, the hold view, a receipt's shape. Only the
// service writes (lock, settle, waiting for receipts); an auditor only reads.
import { encodeCall, words, wordToAddress, wordToUint, type Hex } from './abi.ts';
import type { Rpc } from './rpc.ts';

export const SIG = {
  lock: 'lock(bytes32,address,address)',
  settle: 'settle(bytes32,uint256,uint256)',
  holdOf: 'holdOf(bytes32)',
  operator: 'operator()',
  Locked: 'Locked(bytes32,address,address,uint256)',
  Paid: 'Paid(bytes32,address,uint256,address,uint256)',
} as const;

const STATES = ['none', 'locked', 'paid'] as const;

export interface Hold {
  state: (typeof STATES)[number];
  payer: Hex;
  payee: Hex;
  amount: bigint;
  payerPaid: bigint;
  payeePaid: bigint;
  settledBlock: bigint;
}

export async function readHold(rpc: Rpc, contract: string, escrowRef: string): Promise<Hold> {
  const out = await rpc.call<string>('eth_call', [{ to: contract, data: encodeCall(SIG.holdOf, [{ bytes32: escrowRef }]) }, 'latest']);
  const w = words(out, 'holdOf result');
  if (w.length !== 7) throw new TypeError(`holdOf returned ${w.length} words, expected 7 (is ${contract} the escrow contract?)`);
  const state = STATES[Number(wordToUint(w[0]))];
  if (!state) throw new TypeError(`holdOf returned an unknown state ${wordToUint(w[0])}`);
  return {
    state,
    payer: wordToAddress(w[1]),
    payee: wordToAddress(w[2]),
    amount: wordToUint(w[3]),
    payerPaid: wordToUint(w[4]),
    payeePaid: wordToUint(w[5]),
    settledBlock: wordToUint(w[6]),
  };
}

export interface Receipt {
  transactionHash: Hex;
  status: Hex;
  to: Hex | null;
  contractAddress: Hex | null;
  blockNumber: Hex;
  logs: Array<{ address: Hex; topics: Hex[]; data: Hex }>;
}
