// Amounts as integer micro-units (BigInt, 6 decimals): parse, format, split; never floats (docs/protocol.md §2.3).

import { badRequest } from '../errors.ts';
import { AMOUNT_DECIMALS, AMOUNT_RE, MAX_INTEGER_DIGITS, MICRO } from '@escrow-settlement/protocol/amounts';

// The amount form and split arithmetic are wire semantics, defined once in the client package.
export { AMOUNT_DECIMALS, AMOUNT_RE, formatAmount, MAX_INTEGER_DIGITS, MICRO, splitAmount } from '@escrow-settlement/protocol/amounts';

/**
 * Parse an amount string into micro-units. Throws 400 bad_request naming `field` when the value
 * is not a string, not of the `amount` form ("1.", ".5", "1e3", "-1", " 1" all refused), has an
 * integer part over 18 digits, or is zero (docs/protocol.md §2.3: an amount must be greater than 0).
 */
export function parseAmount(s: unknown, field: string): bigint {
  const formatMsg = `${field} must be a decimal string with at most 6 fraction digits, e.g. "10.5"`;
  if (typeof s !== 'string') throw badRequest(formatMsg);
  if (!AMOUNT_RE.test(s)) throw badRequest(formatMsg); // linear: the pattern cannot backtrack
  const dot = s.indexOf('.');
  const intPart = dot === -1 ? s : s.slice(0, dot);
  if (intPart.length > MAX_INTEGER_DIGITS) throw badRequest(`${field} must have at most ${MAX_INTEGER_DIGITS} integer digits`);
  const fracPart = dot === -1 ? '' : s.slice(dot + 1);
  const micro = BigInt(intPart) * MICRO + BigInt(fracPart.padEnd(AMOUNT_DECIMALS, '0') || '0');
  if (micro === 0n) throw badRequest(`${field} must be greater than 0`);
  return micro;
}
