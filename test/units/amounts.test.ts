import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/errors.ts';
import { AMOUNT_RE, formatAmount, parseAmount, splitAmount } from '../../src/units/amounts.ts';

const parses: Array<[string, bigint, string]> = [
  ['10', 10_000_000n, 'a whole number'],
  ['10.5', 10_500_000n, 'one fraction digit'],
  ['0.5', 500_000n, 'a fraction below one'],
  ['0.000001', 1n, 'the smallest unit'],
  ['123.456789', 123_456_789n, 'six fraction digits'],
  ['01', 1_000_000n, 'a leading zero'],
  ['0010.50', 10_500_000n, 'leading and trailing zeros'],
  ['999999999999999999.999999', 999_999_999_999_999_999_999_999n, '18 integer digits'],
];
for (const [input, micro, what] of parses) {
  test(`parseAmount reads ${JSON.stringify(input)} (${what}) as ${micro} micro-units`, () => {
    assert.equal(parseAmount(input, 'amount'), micro);
  });
}

const refusals: Array<[unknown, RegExp, string]> = [
  ['0', /^amount must be greater than 0$/, 'zero'],
  ['0.000000', /^amount must be greater than 0$/, 'zero with fraction digits'],
  ['0.0000001', /at most 6 fraction digits/, 'seven fraction digits'],
  ['1.', /at most 6 fraction digits/, 'a trailing dot'],
  ['.5', /at most 6 fraction digits/, 'a missing integer part'],
  ['-1', /at most 6 fraction digits/, 'a negative sign'],
  ['+1', /at most 6 fraction digits/, 'a plus sign'],
  ['1e3', /at most 6 fraction digits/, 'an exponent'],
  [' 1', /at most 6 fraction digits/, 'leading whitespace'],
  ['1 ', /at most 6 fraction digits/, 'trailing whitespace'],
  ['1,5', /at most 6 fraction digits/, 'a comma'],
  ['', /at most 6 fraction digits/, 'the empty string'],
  ['١', /at most 6 fraction digits/, 'a non-ASCII digit'],
  [10, /at most 6 fraction digits/, 'a number'],
  [null, /at most 6 fraction digits/, 'null'],
  [undefined, /at most 6 fraction digits/, 'undefined'],
  ['1000000000000000000', /at most 18 integer digits/, '19 integer digits'],
  ['9'.repeat(100_000), /at most 18 integer digits/, 'a huge digit string'],
];
for (const [input, message, what] of refusals) {
  test(`parseAmount refuses ${what} with a 400 naming the field`, () => {
    assert.throws(
      () => parseAmount(input, 'caps.perEscrowMax'),
      (err: unknown) =>
        err instanceof AppError &&
        err.code === 'bad_request' &&
        err.message.startsWith('caps.perEscrowMax ') &&
        message.test(err.message.replace('caps.perEscrowMax', 'amount')),
    );
  });
}

test('the format message shows an example amount', () => {
  assert.throws(() => parseAmount('abc', 'amount'), {
    message: 'amount must be a decimal string with at most 6 fraction digits, e.g. "10.5"',
  });
});

test('AMOUNT_RE is the amount pattern of docs/protocol.md §2.3', () => {
  assert.equal(AMOUNT_RE.source, '^\\d+(\\.\\d{1,6})?$');
});

const formats: Array<[bigint, string]> = [
  [10_000_000n, '10'],
  [500_000n, '0.5'],
  [1n, '0.000001'],
  [0n, '0'],
  [10_500_000n, '10.5'],
  [123_456_789n, '123.456789'],
  [100_000_000_000_000_000_000_000n, '100000000000000000'],
  [-1_500_000n, '-1.5'],
];
for (const [micro, text] of formats) {
  test(`formatAmount writes ${micro} micro-units in the shortest form ${JSON.stringify(text)}`, () => {
    assert.equal(formatAmount(micro), text);
  });
}

test('formatAmount after parseAmount normalises leading and trailing zeros', () => {
  for (const [input, out] of [
    ['01', '1'],
    ['0010.500', '10.5'],
    ['7.000000', '7'],
  ]) {
    assert.equal(formatAmount(parseAmount(input, 'amount')), out);
  }
});

const splits: Array<[bigint, number, bigint, bigint, string]> = [
  [1n, 5000, 0n, 1n, 'one micro-unit split evenly gives the rounding to the payer'],
  [3n, 5000, 1n, 2n, 'an odd total split evenly floors the payee share'],
  [10_000_000n, 5000, 5_000_000n, 5_000_000n, 'an even total split evenly is exact'],
  [10_000_000n, 10000, 10_000_000n, 0n, 'all to the payee'],
  [10_000_000n, 0, 0n, 10_000_000n, 'all to the payer'],
  [1_000_001n, 3333, 333_300n, 666_701n, 'a third rounds down for the payee'],
  [
    999_999_999_999_999_999_999_999n,
    1,
    99_999_999_999_999_999_999n,
    999_900_000_000_000_000_000_000n,
    'the largest amount does not lose precision',
  ],
  [0n, 5000, 0n, 0n, 'a zero total'],
];
for (const [total, bps, payee, payer, what] of splits) {
  test(`splitAmount: ${what}`, () => {
    const r = splitAmount(total, bps);
    assert.deepEqual(r, { payee, payer });
    assert.equal(r.payee + r.payer, total);
  });
}

const badSplits: Array<[bigint, number, string]> = [
  [10n, -1, 'negative basis points'],
  [10n, 10001, 'more than 10000 basis points'],
  [10n, 12.5, 'fractional basis points'],
  [10n, Number.NaN, 'NaN basis points'],
  [-10n, 5000, 'a negative total'],
];
for (const [total, bps, what] of badSplits) {
  test(`splitAmount refuses ${what} as a programming error`, () => {
    assert.throws(() => splitAmount(total, bps), RangeError);
  });
}
