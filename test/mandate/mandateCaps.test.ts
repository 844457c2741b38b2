import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/errors.ts';
import {
  checkMandateCaps,
  mandateRemaining,
  mandateUsage,
  validateMandateCaps,
  type MandateCaps,
  type MandateRequest,
} from '../../src/mandate/mandateCaps.ts';

const AGENT = 'a1'.repeat(32);
const PAYEE = 'b2'.repeat(32);
const OTHER = 'c3'.repeat(32);

const caps: MandateCaps = {
  agent: AGENT,
  perEscrowMax: '100',
  cumulativeMax: '250.5',
  allowedAssets: ['USDC', 'EURC'],
  allowedCounterparties: [PAYEE],
  expiresAt: '2027-01-01T00:00:00Z',
};

function isBadRequest(message: string | RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'bad_request');
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  };
}

// ---- validateMandateCaps ----

test('validateMandateCaps accepts full caps and returns an equal copy', () => {
  const out = validateMandateCaps(structuredClone(caps));
  assert.deepEqual(out, caps);
});

test('validateMandateCaps keeps amounts and expiresAt exactly as signed', () => {
  const signed = { ...caps, perEscrowMax: '0100.50', cumulativeMax: '7.000000', expiresAt: '2027-01-01T02:00:00+02:00' };
  const out = validateMandateCaps(signed);
  assert.equal(out.perEscrowMax, '0100.50');
  assert.equal(out.cumulativeMax, '7.000000');
  assert.equal(out.expiresAt, '2027-01-01T02:00:00+02:00');
});

test('validateMandateCaps leaves an absent allowedCounterparties absent', () => {
  const { allowedCounterparties: _, ...rest } = caps;
  const out = validateMandateCaps(rest);
  assert.equal(Object.hasOwn(out, 'allowedCounterparties'), false);
});

test('validateMandateCaps keeps an empty allowedCounterparties', () => {
  assert.deepEqual(validateMandateCaps({ ...caps, allowedCounterparties: [] }).allowedCounterparties, []);
});

test('validateMandateCaps returns arrays that do not share the input', () => {
  const input = structuredClone(caps);
  const out = validateMandateCaps(input);
  input.allowedAssets.push('X');
  assert.deepEqual(out.allowedAssets, ['USDC', 'EURC']);
});

test('validateMandateCaps accepts assets with every allowed character and 100 of them', () => {
  const allowedAssets = ['eip155:1.erc20', 'A-b_c.d:0', 'x'.repeat(64), ...Array.from({ length: 97 }, (_, i) => `A${i}`)];
  assert.equal(validateMandateCaps({ ...caps, allowedAssets }).allowedAssets.length, 100);
});

test('validateMandateCaps accepts 1000 counterparties', () => {
  assert.equal(validateMandateCaps({ ...caps, allowedCounterparties: Array(1000).fill(PAYEE) }).allowedCounterparties?.length, 1000);
});

const without = (field: keyof MandateCaps) => {
  const c: Record<string, unknown> = { ...caps };
  delete c[field];
  return c;
};

const refusals: Array<[string, unknown, string | RegExp]> = [
  ['caps that are not an object', 'caps', 'caps must be an object'],
  ['caps that are an array', [caps], 'caps must be an object'],
  ['caps that are null', null, 'caps must be an object'],
  [
    'an unknown field',
    { ...caps, maxPerDay: '5' },
    /^caps\.maxPerDay is not a known field \(known fields: agent, perEscrowMax, cumulativeMax, allowedAssets, allowedCounterparties, expiresAt\)$/,
  ],
  ['a missing agent', without('agent'), 'caps.agent is required'],
  [
    'an agent in uppercase hex',
    { ...caps, agent: AGENT.toUpperCase() },
    'caps.agent must be 64 lowercase hex characters (an Ed25519 public key)',
  ],
  ['a short agent', { ...caps, agent: 'ab' }, 'caps.agent must be 64 lowercase hex characters (an Ed25519 public key)'],
  ['a missing perEscrowMax', without('perEscrowMax'), 'caps.perEscrowMax is required'],
  [
    'a numeric perEscrowMax',
    { ...caps, perEscrowMax: 100 },
    'caps.perEscrowMax must be a decimal string with at most 6 fraction digits, e.g. "10.5"',
  ],
  ['a zero perEscrowMax', { ...caps, perEscrowMax: '0' }, 'caps.perEscrowMax must be greater than 0'],
  ['a missing cumulativeMax', without('cumulativeMax'), 'caps.cumulativeMax is required'],
  [
    'a cumulativeMax with 7 fraction digits',
    { ...caps, cumulativeMax: '1.0000001' },
    'caps.cumulativeMax must be a decimal string with at most 6 fraction digits, e.g. "10.5"',
  ],
  ['a missing allowedAssets', without('allowedAssets'), 'caps.allowedAssets is required'],
  ['allowedAssets that are a string', { ...caps, allowedAssets: 'USDC' }, 'caps.allowedAssets must be an array of asset codes'],
  ['empty allowedAssets', { ...caps, allowedAssets: [] }, 'caps.allowedAssets must have 1 to 100 entries (got 0)'],
  ['101 allowedAssets', { ...caps, allowedAssets: Array(101).fill('USDC') }, 'caps.allowedAssets must have 1 to 100 entries (got 101)'],
  ['an empty asset', { ...caps, allowedAssets: ['USDC', ''] }, /^caps\.allowedAssets\[1\] must be an asset code of 1 to 64 characters/],
  ['an asset with a space', { ...caps, allowedAssets: ['US DC'] }, /^caps\.allowedAssets\[0\] must be an asset code/],
  ['an asset with a slash', { ...caps, allowedAssets: ['a/b'] }, /^caps\.allowedAssets\[0\] must be an asset code/],
  ['an asset of 65 characters', { ...caps, allowedAssets: ['x'.repeat(65)] }, /^caps\.allowedAssets\[0\] must be an asset code/],
  ['a non-string asset', { ...caps, allowedAssets: [1] }, /^caps\.allowedAssets\[0\] must be an asset code/],
  [
    'allowedCounterparties that are not an array',
    { ...caps, allowedCounterparties: PAYEE },
    'caps.allowedCounterparties must be an array of public keys',
  ],
  [
    'allowedCounterparties that are null',
    { ...caps, allowedCounterparties: null },
    'caps.allowedCounterparties must be an array of public keys',
  ],
  [
    '1001 allowedCounterparties',
    { ...caps, allowedCounterparties: Array(1001).fill(PAYEE) },
    'caps.allowedCounterparties must have at most 1000 entries (got 1001)',
  ],
  [
    'a bad counterparty key',
    { ...caps, allowedCounterparties: [PAYEE, 'zz'] },
    'caps.allowedCounterparties[1] must be 64 lowercase hex characters (an Ed25519 public key)',
  ],
  ['a missing expiresAt', without('expiresAt'), 'caps.expiresAt is required'],
  [
    'an expiresAt without a zone',
    { ...caps, expiresAt: '2027-01-01T00:00:00' },
    /^caps\.expiresAt must be an ISO 8601 date-time with a zone/,
  ],
  [
    'an expiresAt as epoch milliseconds',
    { ...caps, expiresAt: 1798761600000 },
    /^caps\.expiresAt must be an ISO 8601 date-time with a zone/,
  ],
  [
    'an impossible expiresAt date',
    { ...caps, expiresAt: '2027-02-29T00:00:00Z' },
    /^caps\.expiresAt must be an ISO 8601 date-time with a zone/,
  ],
];
for (const [what, input, message] of refusals) {
  test(`validateMandateCaps refuses ${what}, naming the path`, () => {
    assert.throws(() => validateMandateCaps(input), isBadRequest(message));
  });
}

test('validateMandateCaps uses a custom root path in messages', () => {
  assert.throws(() => validateMandateCaps({ ...caps, agent: 1 }, 'body.caps'), isBadRequest(/^body\.caps\.agent must be/));
});

// ---- checkMandateCaps ----

const ok: MandateRequest = {
  payer: AGENT,
  payee: PAYEE,
  amount: 50_000_000n,
  asset: 'USDC',
  now: new Date('2026-06-01T00:00:00Z'),
  spent: 0n,
};

const allowed: Array<[string, MandateCaps, Partial<MandateRequest>]> = [
  ['an escrow inside every cap', caps, {}],
  ['an amount exactly at perEscrowMax', caps, { amount: 100_000_000n }],
  ['an amount that reaches cumulativeMax exactly', caps, { amount: 50_500_000n, spent: 200_000_000n }],
  ['the second allowed asset', caps, { asset: 'EURC' }],
  ['any payee when allowedCounterparties is absent', { ...caps, allowedCounterparties: undefined }, { payee: OTHER }],
  ['any payee when allowedCounterparties is empty', { ...caps, allowedCounterparties: [] }, { payee: OTHER }],
  ['one millisecond before expiry', caps, { now: new Date('2026-12-31T23:59:59.999Z') }],
  ['an expiry written with an offset', { ...caps, expiresAt: '2027-01-01T02:00:00+02:00' }, { now: new Date('2026-12-31T23:59:59.999Z') }],
];
for (const [what, c, req] of allowed) {
  test(`checkMandateCaps allows ${what}`, () => {
    assert.doesNotThrow(() => checkMandateCaps(c, { ...ok, ...req }));
  });
}

const violations: Array<[string, MandateCaps, Partial<MandateRequest>, string]> = [
  ['a payer that is not the bound agent', caps, { payer: OTHER }, `the mandate binds agent ${AGENT}; the escrow's payer is ${OTHER}`],
  [
    'an escrow at the expiry instant',
    caps,
    { now: new Date('2027-01-01T00:00:00Z') },
    'the mandate expired at 2027-01-01T00:00:00.000Z (expiresAt)',
  ],
  [
    'an escrow after expiry written with an offset',
    { ...caps, expiresAt: '2027-01-01T02:00:00+02:00' },
    { now: new Date('2027-06-01T00:00:00Z') },
    'the mandate expired at 2027-01-01T00:00:00.000Z (expiresAt)',
  ],
  ['an asset outside allowedAssets', caps, { asset: 'BTC' }, 'asset "BTC" is not in the mandate\'s allowedAssets (USDC, EURC)'],
  ['an asset differing only in case', caps, { asset: 'usdc' }, 'asset "usdc" is not in the mandate\'s allowedAssets (USDC, EURC)'],
  ['a payee outside allowedCounterparties', caps, { payee: OTHER }, `payee ${OTHER} is not in the mandate's allowedCounterparties`],
  [
    'an amount over perEscrowMax by one micro-unit',
    caps,
    { amount: 100_000_001n },
    "amount 100.000001 exceeds the mandate's perEscrowMax of 100",
  ],
  [
    'an amount past cumulativeMax',
    caps,
    { amount: 60_000_000n, spent: 200_000_000n },
    "amount 60 exceeds the mandate's cumulativeMax: 50.5 remaining (cumulativeMax 250.5, spent 200)",
  ],
  [
    'any amount once the cumulative cap is used up',
    caps,
    { amount: 1n, spent: 250_500_000n },
    "amount 0.000001 exceeds the mandate's cumulativeMax: 0 remaining (cumulativeMax 250.5, spent 250.5)",
  ],
];
for (const [what, c, req, message] of violations) {
  test(`checkMandateCaps refuses ${what} with mandate_violation`, () => {
    assert.throws(
      () => checkMandateCaps(c, { ...ok, ...req }),
      (err: unknown) => {
        assert.ok(err instanceof AppError);
        assert.equal(err.code, 'mandate_violation');
        assert.equal(err.status, 403);
        assert.equal(err.message, message);
        return true;
      },
    );
  });
}

test('checkMandateCaps checks the agent before every other cap', () => {
  assert.throws(() => checkMandateCaps(caps, { ...ok, payer: OTHER, asset: 'BTC', amount: 10n ** 15n }), /binds agent/);
});

// ---- usage ----

const usage: Array<[bigint, string, string]> = [
  [0n, '0', '250.5'],
  [200_000_000n, '200', '50.5'],
  [250_500_000n, '250.5', '0'],
  [300_000_000n, '300', '0'],
];
for (const [spent, spentText, remaining] of usage) {
  test(`mandateUsage reports spent ${spentText} as ${remaining} remaining, never below zero`, () => {
    assert.deepEqual(mandateUsage(caps, spent), { spent: spentText, remaining });
    assert.equal(mandateRemaining(caps, spent) >= 0n, true);
  });
}
