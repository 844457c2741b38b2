// x402-level refusals of the facilitator (docs/x402.md "Refusals"): a well-formed facilitator
// request whose payment cannot proceed is answered with status 200 and `isValid: false` /
// `success: false`, never with the service's error envelope (that is for bodies that are not
// facilitator requests at all).
import { X402_PAYMENT_REFUSALS } from '@escrow-settlement/protocol/x402';
import { AppError } from '../../errors.ts';

/** The x402 refusals a verify answers with: the x402 demo's codes plus terms_mismatch (docs/x402.md). */
export const X402_REFUSAL_CODES = [...X402_PAYMENT_REFUSALS, 'terms_mismatch'] as const;

/**
 * Every refusal code: a settle may also answer verdict_failed (the delivery fails the terms),
 * custody_failed, or invalid_state (a refund past its deadline or over the remaining amount).
 */
export type RefusalCode = (typeof X402_REFUSAL_CODES)[number] | 'verdict_failed' | 'custody_failed' | 'invalid_state';
/** The codes only a settle answers with. */
export const SETTLE_ONLY_CODES = ['verdict_failed', 'custody_failed', 'invalid_state'] as const;

export class Refusal extends Error {
  constructor(
    readonly code: RefusalCode,
    message: string,
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'Refusal';
  }
}

export const refuse = (code: RefusalCode, message: string) => new Refusal(code, message);

/**
 * A domain command's AppError met while settling, as the refusal an x402 caller reads: the
 * command's own message, under payment_invalid (or custody_failed). Anything else is rethrown.
 */
export function asRefusal(err: unknown): Refusal {
  if (err instanceof Refusal) return err;
  if (err instanceof AppError && err.status < 500) return new Refusal('payment_invalid', err.message);
  if (err instanceof AppError && err.code === 'custody_failed') return new Refusal('custody_failed', err.message);
  throw err;
}

/** Runs `fn`, turning the client-side failures it throws into refusals. */
export async function refusing<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asRefusal(err);
  }
}
