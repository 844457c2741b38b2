// Chain custody: the CustodyAdapter that locks an escrow's amount in the SettlementEscrow contract
// at funding and pays it out (release / refund / split) at closing, from the service's unlocked
// dev account, on a local development chain only (connect.ts refuses anything else).
//
// Exactly-once payout, and why the order of checks matters. closeMatter calls settle() INSIDE the
// closing's database transaction, and the custody journal (intent, reference, status) is written
// in that same transaction. A chain transaction cannot join it: if the payout is mined and then
// the database transaction fails (a constraint, a lost connection, the process dying before
// COMMIT), the journal row and the terminal state roll back, but the payout stays on chain. Nothing
// in the database remembers it. What does remember it is the contract, keyed by escrowRef, which
// is derived deterministically from the escrow id (mapping.ts), not from anything stored. So every
// settle() first reads holdOf(escrowRef): already paid with these amounts → confirm with the
// transaction that paid (found by its Paid event), and send nothing. A later retry, a repeated
// request or the sweep therefore finishes the matter without a second payout. The contract is the
// last line: settle() of a hold that is not Locked reverts, so even two racing senders (or a
// payout still pending when a retry sends again) cannot pay twice; the loser is journaled as a
// revert and the next retry confirms from the chain.
import type { Queryable } from '../db/types.ts';
import type { CustodyAdapter, LockRequest, LockResult, SandboxFault, SettleRequest, SettleResult } from './types.ts';
import { encodeCall, keccakHex, type Hex } from '@escrow-settlement/protocol/chain/abi';
import { findPaidTx, readHold, sendAndWait, SIG, GAS, whyReverted, type Sent, type TxRequest } from './contract.ts';
import { caip2, escrowRefOf, payoutAddressOf, toWei } from '@escrow-settlement/protocol/chain/mapping';
import type { Rpc } from '@escrow-settlement/protocol/chain/rpc';

export interface ChainCustodyOptions {
  rpc: Rpc;
  chainId: number;
  /** The deployed SettlementEscrow (connect.ts deploys it once per deployment). */
  contract: Hex;
  /** The unlocked dev account that operates the contract and funds the locks. */
  account: Hex;
  /** How long to wait for a receipt before the attempt counts as unconfirmed (default 30 000 ms). */
  confirmTimeoutMs?: number;
  /** Receipt polling interval (default 200 ms). */
  pollMs?: number;
  /** Spends a pending sandbox fault (src/custody/simulated.ts takeSandboxFault), passed in by the edge. */
  sandboxFault: SandboxFault;
}

export interface ChainCustody extends CustodyAdapter {
  readonly kind: 'chain';
  readonly chain: string;
  readonly contract: Hex;
  readonly account: Hex;
}

const fmt = (wei: bigint) => `${wei} wei`;

export function createChainCustody(o: ChainCustodyOptions): ChainCustody {
  const { rpc } = o;
  const contract = o.contract.toLowerCase() as Hex;
  const account = o.account.toLowerCase() as Hex;
  const chain = caip2(o.chainId);
  const wait = { confirmTimeoutMs: o.confirmTimeoutMs ?? 30_000, pollMs: o.pollMs ?? 200 };

  /** Sends and classifies: null when mined with status 1, else the journal line. */
  async function send(what: string, tx: TxRequest, note = ''): Promise<{ sent: Sent; error: string | null }> {
    const sent = await sendAndWait(rpc, tx, wait);
    if (!sent.receipt) {
      return {
        sent,
        error: `${what} transaction ${sent.hash} not confirmed within ${wait.confirmTimeoutMs} ms; a retry reads the chain before sending again${note}`,
      };
    }
    if (BigInt(sent.receipt.status) !== 1n) {
      const reason = await whyReverted(rpc, tx, sent.receipt);
      return { sent, error: `${what} transaction ${sent.hash} reverted${reason ? ` (${reason})` : ''}${note}` };
    }
    return { sent, error: null };
  }

  const describe = (err: unknown) => `chain custody: ${(err as Error)?.message ?? String(err)}`;

  return {
    kind: 'chain',
    chain,
    contract,
    account,

    async lock(_tx: Queryable, req: LockRequest): Promise<LockResult> {
      const escrowRef = escrowRefOf(req.escrowId);
      const payer = payoutAddressOf(req.payer);
      const payee = payoutAddressOf(req.payee);
      const amount = toWei(req.amount);
      try {
        // Funding runs in a database transaction too: a lock mined before that transaction failed
        // is found here when the escrow is funded again, and reused instead of locking twice.
        const hold = await readHold(rpc, contract, escrowRef);
        if (hold.state !== 'none') {
          return hold.payer === payer && hold.payee === payee && hold.amount === amount
            ? { ok: true }
            : { ok: false, error: `escrowRef ${escrowRef} already holds another lock on chain (${fmt(hold.amount)}, ${hold.state})` };
        }
        const { error } = await send('lock', {
          from: account,
          to: contract,
          value: amount,
          gas: GAS.lock,
          data: encodeCall(SIG.lock, [{ bytes32: escrowRef }, { address: payer }, { address: payee }]),
        });
        return error ? { ok: false, error } : { ok: true };
      } catch (err) {
        return { ok: false, error: describe(err) };
      }
    },

    async settle(tx: Queryable, req: SettleRequest): Promise<SettleResult> {
      // The contract pays two legs; escrow creation refuses a fee here, so one never reaches this point.
      if (req.feeAmount !== undefined && req.feeAmount > 0n) return { ok: false, error: 'chain custody cannot pay a fee leg' };
      const escrowRef = escrowRefOf(req.escrowId);
      const payerWei = toWei(req.payerAmount);
      const payeeWei = toWei(req.payeeAmount);
      const confirmed = (txHash: Hex): SettleResult => ({
        ok: true,
        reference: req.reference,
        anchor: { chain, contract, escrowRef, txHash },
      });
      try {
        // Read the chain before sending anything (see the top of this file).
        const hold = await readHold(rpc, contract, escrowRef);
        if (hold.state === 'paid') {
          if (hold.payerPaid !== payerWei || hold.payeePaid !== payeeWei) {
            return {
              ok: false,
              error: `escrowRef ${escrowRef} was already paid out on chain with other amounts (payer ${fmt(hold.payerPaid)}, payee ${fmt(hold.payeePaid)}); nothing was sent: reconcile by hand`,
            };
          }
          const paidBy = await findPaidTx(rpc, contract, escrowRef, hold.settledBlock);
          if (!paidBy)
            return {
              ok: false,
              error: `escrowRef ${escrowRef} is paid out on chain but its Paid event was not found in block ${hold.settledBlock}`,
            };
          return confirmed(paidBy);
        }
        if (hold.state === 'none')
          return { ok: false, error: `escrowRef ${escrowRef} holds no lock on chain (was the escrow funded under chain custody?)` };
        if (hold.amount !== payerWei + payeeWei) {
          return { ok: false, error: `escrowRef ${escrowRef} holds ${fmt(hold.amount)} but the closing pays ${fmt(payerWei + payeeWei)}` };
        }
        // Sandbox fail-next (POST /v1/sandbox/custody/fail-next): send a real payout for a ref
        // that holds no lock, so the contract reverts it on chain and the revert path is exercised.
        const fault = await o.sandboxFault(tx, req.faultPending);
        const target = fault ? keccakHex(`${req.escrowId}#sandbox-fault`) : escrowRef;
        const { sent, error } = await send(
          'payout',
          {
            from: account,
            to: contract,
            gas: GAS.settle,
            data: encodeCall(SIG.settle, [{ bytes32: target }, { uint: payerWei }, { uint: payeeWei }]),
          },
          fault ? ' [sandbox fail-next]' : '',
        );
        return error ? { ok: false, error } : confirmed(sent.hash);
      } catch (err) {
        return { ok: false, error: describe(err) };
      }
    },
  };
}
