// How an escrow maps onto the chain:
//   escrowRef      = keccak256(UTF-8 of the escrow id), a bytes32 anyone can recompute from a proof;
//   payout address = the last 20 bytes of keccak256(the party's 32-byte Ed25519 public key);
//   amount         = micro-units × 10^12 wei, so 1 whole unit of any asset is 1 ether on the dev chain.
import { fromHex } from '../crypto/bytes.ts';
import { AMOUNT_RE, MICRO, splitAmount } from '../amounts.ts';
import type { Proof } from '../types.ts';
import { keccakHex, type Hex } from './abi.ts';

/** Wei per micro-unit: 10^12, so 10^6 micro-units (one whole unit) = 10^18 wei (one ether). */
export const WEI_PER_MICRO = 1_000_000_000_000n;

/** The only chains chain custody talks to: local development chains (anvil/hardhat 31337, ganache 1337). */
export const LOCAL_CHAIN_IDS: ReadonlyArray<number> = [31337, 1337];

/** CAIP-2 id of an EVM chain. */
export const caip2 = (chainId: number | bigint) => `eip155:${chainId}`;

/** bytes32 key of an escrow's hold in the contract: keccak256(UTF-8 escrow id). Deterministic, so a retry finds it. */
export const escrowRefOf = (escrowId: string): Hex => keccakHex(escrowId);

/** Deterministic EVM payout address of an Ed25519 party key: last 20 bytes of keccak256(public key bytes). */
export function payoutAddressOf(publicKeyHex: string): Hex {
  const key = fromHex(publicKeyHex, 'publicKey');
  if (key.length !== 32) throw new TypeError('publicKey must be 32 bytes of hex');
  return `0x${keccakHex(key).slice(-40)}`;
}

export const toWei = (micro: bigint): bigint => micro * WEI_PER_MICRO;

/** Micro-units an amount string stands for, or a TypeError naming it. */
function micro(amount: string): bigint {
  if (typeof amount !== 'string' || !AMOUNT_RE.test(amount)) throw new TypeError('proof.amount is not an amount');
  const [whole, frac = ''] = amount.split('.');
  return BigInt(whole) * MICRO + BigInt(frac.padEnd(6, '0'));
}

/** What a proof says each party received, in wei. */
export function proofPayoutWei(proof: Pick<Proof, 'amount' | 'outcome' | 'shares'>): { payer: bigint; payee: bigint } {
  const total = micro(proof.amount);
  const m =
    proof.outcome === 'released'
      ? { payer: 0n, payee: total }
      : proof.outcome === 'refunded'
        ? { payer: total, payee: 0n }
        : splitAmount(total, proof.shares?.payeeBps ?? NaN);
  return { payer: toWei(m.payer), payee: toWei(m.payee) };
}
