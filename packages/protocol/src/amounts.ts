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

/** Micro-units of an amount string of the wire form (AMOUNT_RE, at most MAX_INTEGER_DIGITS integer digits), or null. Zero is allowed here. */
export function amountMicro(s: unknown): bigint | null {
  if (typeof s !== 'string' || !AMOUNT_RE.test(s)) return null;
  const dot = s.indexOf('.');
  const intPart = dot === -1 ? s : s.slice(0, dot);
  if (intPart.length > MAX_INTEGER_DIGITS) return null;
  const fracPart = dot === -1 ? '' : s.slice(dot + 1);
  return BigInt(intPart) * MICRO + BigInt(fracPart.padEnd(AMOUNT_DECIMALS, '0') || '0');
}

/**
 * A finite non-negative JSON number as an exact fraction `num / 10^scale`: the number is read as the
 * shortest decimal that round-trips it (ECMAScript Number::toString, what JSON.stringify writes;
 * Python's repr(float) gives the same value), so 0.1 is exactly 1/10, never 0.1000000000000000055….
 */
export function exactDecimal(n: number): { num: bigint; scale: number } {
  if (!Number.isFinite(n) || n < 0) throw new RangeError('not a non-negative finite number');
  const [mant, expPart] = String(n).split('e');
  const exp = expPart === undefined ? 0 : Number(expPart);
  const dot = mant.indexOf('.');
  const digits = dot === -1 ? mant : mant.slice(0, dot) + mant.slice(dot + 1);
  const scale = (dot === -1 ? 0 : mant.length - dot - 1) - exp;
  if (scale >= 0) return { num: BigInt(digits), scale };
  return { num: BigInt(digits) * 10n ** BigInt(-scale), scale: 0 };
}

/**
 * Whether `amount` ≤ `perUnit` × `units` exactly (micro-units; units a JSON number as exactDecimal
 * reads it): amount × 10^scale ≤ perUnit × num, in integers, with no rounding anywhere.
 */
export function withinMeteredPrice(amount: bigint, perUnit: bigint, units: number): boolean {
  const { num, scale } = exactDecimal(units);
  return amount * 10n ** BigInt(scale) <= perUnit * num;
}
