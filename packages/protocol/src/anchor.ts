// Checking a proof's chain anchor against the chain itself (its `anchor`): the
// payout transaction succeeded, went to the escrow contract, and the contract reports the proof's
// escrowRef paid to the parties' payout addresses with the proof's amounts. Web APIs only.
import { eventTopic, strip, words, wordToAddress, wordToUint } from './chain/abi.ts';
import { readHold, SIG, type Receipt } from './chain/hold.ts';
import { escrowRefOf, LOCAL_CHAIN_IDS, payoutAddressOf, proofPayoutWei } from './chain/mapping.ts';
import { createRpc, type FetchLike } from './chain/rpc.ts';
import { proofProblem } from './shape.ts';
import { verifyProof } from './verify.ts';
import type { Check, Proof, VerifyResult } from './types.ts';

export interface AnchorOptions {
  /** JSON-RPC URL of the chain the anchor names (a local development chain). */
  rpcUrl: string;
  /** fetch to use (default: globalThis.fetch). */
  fetch?: FetchLike;
  /** Per-call time limit in ms (default 10 000). */
  timeoutMs?: number;
}

const PAID = eventTopic(SIG.Paid);

async function check(name: string, fn: () => Promise<[boolean, string]>): Promise<Check> {
  try {
    const [ok, detail] = await fn();
    return { name, ok, detail };
  } catch (err) {
    return { name, ok: false, detail: `could not be checked: ${(err as Error).message}` };
  }
}

/**
 * Checks `proof.anchor` against the chain at `rpcUrl`: the issuer signature (which covers the
 * anchor), the chain id, escrowRef = keccak256(escrowId), the receipt (status 1, sent to the
 * contract, carrying its Paid event for escrowRef with the proof's amounts), and the contract's
 * own record of the hold (paid, to the parties' payout addresses, with the proof's amounts).
 */
export async function verifyAnchor(proof: Proof, opts: AnchorOptions): Promise<VerifyResult> {
  const problem = proofProblem(proof);
  if (problem) throw new TypeError(problem);
  if (typeof opts?.rpcUrl !== 'string') throw new TypeError('rpcUrl must be the JSON-RPC URL of the chain');
  const a = proof.anchor;
  if (!a)
    return {
      ok: false,
      checks: [{ name: 'anchor.present', ok: false, detail: 'the proof carries no anchor (its custody was not chain-backed)' }],
    };
  const rpc = createRpc(opts.rpcUrl, { fetch: opts.fetch, timeoutMs: opts.timeoutMs });
  const contract = a.contract.toLowerCase();
  const ref = a.escrowRef.toLowerCase();
  const wei = proofPayoutWei(proof);
  const want = { payer: payoutAddressOf(proof.payer), payee: payoutAddressOf(proof.payee), payerWei: wei.payer, payeeWei: wei.payee };
  const checks: Check[] = [verifyProof(proof).checks[0]];

  checks.push(
    await check('anchor.chain', async () => {
      const m = /^eip155:(\d{1,18})$/.exec(a.chain);
      if (!m) return [false, `anchor.chain ${a.chain} is not a CAIP-2 eip155 chain id`];
      const id = Number(m[1]);
      if (!LOCAL_CHAIN_IDS.includes(id)) return [false, `anchor.chain ${a.chain} is not a local development chain`];
      const node = Number(BigInt(await rpc.call<string>('eth_chainId')));
      return node === id
        ? [true, `the node at rpcUrl is chain ${id}`]
        : [false, `the node at rpcUrl is chain ${node}, the anchor names ${id}`];
    }),
  );
  checks.push(
    await check('anchor.escrowRef', async () => {
      const expected = escrowRefOf(proof.escrowId);
      return ref === expected
        ? [true, 'escrowRef equals keccak256(escrowId)']
        : [false, `escrowRef ${a.escrowRef} is not keccak256(${proof.escrowId}) = ${expected}`];
    }),
  );
  checks.push(
    await check('anchor.receipt', async () => {
      strip(a.txHash, 'anchor.txHash', 32);
      const r = await rpc.call<Receipt | null>('eth_getTransactionReceipt', [a.txHash]);
      if (!r) return [false, `no mined transaction ${a.txHash} on this chain`];
      if (BigInt(r.status) !== 1n) return [false, `transaction ${a.txHash} reverted`];
      if (r.to?.toLowerCase() !== contract)
        return [false, `transaction ${a.txHash} was sent to ${r.to}, not to the contract ${a.contract}`];
      const paid = r.logs.filter(
        (l) => l.address.toLowerCase() === contract && l.topics[0]?.toLowerCase() === PAID && l.topics[1]?.toLowerCase() === ref,
      );
      if (paid.length !== 1) return [false, `transaction ${a.txHash} emitted no Paid event for escrowRef ${a.escrowRef}`];
      const [payer, payerWei, payee, payeeWei] = words(paid[0].data, 'Paid event data');
      const got = {
        payer: wordToAddress(payer),
        payerWei: wordToUint(payerWei),
        payee: wordToAddress(payee),
        payeeWei: wordToUint(payeeWei),
      };
      const same = got.payer === want.payer && got.payee === want.payee && got.payerWei === want.payerWei && got.payeeWei === want.payeeWei;
      return same
        ? [true, `transaction ${a.txHash} succeeded, was sent to the contract, and paid out escrowRef as the proof says`]
        : [
            false,
            `transaction ${a.txHash} paid payer ${got.payer} ${got.payerWei} wei and payee ${got.payee} ${got.payeeWei} wei; the proof says ${want.payer} ${want.payerWei} wei and ${want.payee} ${want.payeeWei} wei`,
          ];
    }),
  );
  checks.push(
    await check('anchor.payout', async () => {
      const h = await readHold(rpc, contract, ref);
      if (h.state !== 'paid') return [false, `the contract reports escrowRef ${a.escrowRef} ${h.state}, not paid`];
      if (h.payer !== want.payer || h.payee !== want.payee)
        return [false, `the contract pays ${h.payer} / ${h.payee}, not the parties' payout addresses ${want.payer} / ${want.payee}`];
      if (h.payerPaid !== want.payerWei || h.payeePaid !== want.payeeWei) {
        return [
          false,
          `the contract paid payer ${h.payerPaid} wei and payee ${h.payeePaid} wei; the proof's ${proof.outcome} of ${proof.amount} ${proof.asset} maps to ${want.payerWei} and ${want.payeeWei} wei`,
        ];
      }
      return [true, `the contract reports escrowRef paid: payer ${h.payerPaid} wei, payee ${h.payeePaid} wei, as the proof says`];
    }),
  );
  return { ok: checks.every((c) => c.ok), checks };
}
