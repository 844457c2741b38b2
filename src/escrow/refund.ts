// Refund: from funded, or delivered with a failed verdict; closes in a refunded proof (docs/protocol.md §4.1).
import { commandTx } from './deps.ts';
import type { CommandDeps } from '../commandDeps.ts';
import { AppError } from '../errors.ts';
import { lockEscrow } from './escrowRow.ts';
import { transition } from './states.ts';
import { closeMatter, type CloseResult } from './close.ts';
import type { Proof } from '../proof/proof.ts';

/** 502 custody_failed, thrown only after the transaction that journaled the failure committed. */
export function custodyFailed(r: Extract<CloseResult, { ok: false }>): AppError {
  return new AppError(
    'custody_failed',
    `custody could not settle (attempt ${r.attempt}: ${r.error}); the settlement is journaled: retry with POST /v1/escrows/{id}/custody/retry`,
  );
}

/** The payee's signed void a refund rests on (an x402 facilitator payment): escrow.refunded records it. */
export type Void = { signer: string; signedAt: string; signature: string };

export async function refundEscrow(svc: CommandDeps, id: string, voided?: Void): Promise<Proof> {
  const txOpts = commandTx(svc, [`escrow:${id}`]);
  const r = await svc.db.tx(async (tx) => {
    const e = await lockEscrow(tx, id);
    transition('refund', e);
    return closeMatter(tx, svc, { e, closing: voided ? { kind: 'refund', void: voided } : { kind: 'refund' } });
  }, txOpts);
  if (!r.ok) throw custodyFailed(r);
  return r.proof;
}
