// The bodies parties sign for the acts that move money (docs/protocol.md §2.7, §24): built once here,
// beside the bundle code that shows them to a verifier, and used by the commands that check them.
import { formatAmount } from '../units/amounts.ts';

/**
 * The bytes a payee signs: JCS of {escrowId, contentHash, submittedAt}, with `amount` (the decimal
 * string) when the delivery claims one (docs/protocol.md §2.7, §24.2).
 */
export const deliverySigningBody = (escrowId: string, contentHash: string, submittedAt: string, amount?: bigint) =>
  amount === undefined ? { escrowId, contentHash, submittedAt } : { escrowId, contentHash, submittedAt, amount: formatAmount(amount) };

/** The body a refund's signer signs (docs/protocol.md §2.7, §24.4): `amount` the amount string, `reason` "" when absent. */
export const refundSigningBody = (escrowId: string, amount: bigint, reason: string, signedAt: string) => ({
  escrowId,
  action: 'refund' as const,
  amount: formatAmount(amount),
  reason,
  signedAt,
});

/** The body a payer signs to request a refund (docs/protocol.md §24.5). */
export const refundRequestSigningBody = (escrowId: string, amount: bigint, reason: string, signedAt: string) => ({
  escrowId,
  action: 'refund.request' as const,
  amount: formatAmount(amount),
  reason,
  signedAt,
});
