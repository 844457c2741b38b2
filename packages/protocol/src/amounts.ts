// Amounts on the wire: integer micro-units (BigInt, 6 decimals), the amount
// string's form, its shortest formatting, and the split arithmetic. The service parses
// request amounts with its own error envelope on top of these.

/** Fraction digits of an amount. */
export const AMOUNT_DECIMALS = 6;
/** Micro-units in one whole unit. */
export const MICRO = 1_000_000n;
/** An amount string: digits, optionally a dot and 1..6 fraction digits. Leading zeros are allowed ("01"); output is normalised. */
export const AMOUNT_RE = /^\d+(\.\d{1,6})?$/;
/** Cap on the integer part (digits as written, leading zeros included), so absurd strings never reach BigInt. */
export const MAX_INTEGER_DIGITS = 18;

/** Shortest decimal form of a micro-unit amount: 10000000n → "10", 500000n → "0.5", 1n → "0.000001", 0n → "0". */
export function formatAmount(micro: bigint): string {
  if (micro < 0n) return `-${formatAmount(-micro)}`;
  const whole = micro / MICRO;
  const frac = micro % MICRO;
  if (frac === 0n) return whole.toString();
  return `${whole}.${frac.toString().padStart(AMOUNT_DECIMALS, '0').replace(/0+$/, '')}`;
}

/**
 * Split arithmetic: payee gets floor(total × payeeBps / 10000) micro-units, the payer the
 * rest, so the parts always sum to `total` and rounding favours the payer. The caller validates
 * shares; a bad `payeeBps` here is a programming error (RangeError).
 */
export function splitAmount(total: bigint, payeeBps: number): { payee: bigint; payer: bigint } {
  if (!Number.isInteger(payeeBps) || payeeBps < 0 || payeeBps > 10_000) {
    throw new RangeError(`payeeBps must be an integer in 0..10000, got ${payeeBps}`);
  }
  if (total < 0n) throw new RangeError('total must not be negative');
  const payee = (total * BigInt(payeeBps)) / 10_000n; // BigInt division truncates; operands are non-negative, so this is floor
  return { payee, payer: total - payee };
}
