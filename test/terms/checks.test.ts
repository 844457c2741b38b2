import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/errors.ts';
import { evaluateChecks, parseIsoDateTime, validateTerms, type TermCheck, type Terms } from '../../src/terms/checks.ts';
import { evaluatePredicate, validatePredicate } from '../../src/terms/predicates.ts';

const H = 'ab'.repeat(32);
const H2 = 'cd'.repeat(32);

function isBadRequest(message: string | RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'bad_request');
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  };
}

const terms = (checks: unknown[], extra: Record<string, unknown> = {}) => ({ description: 'd', checks, ...extra });

// ---- validateTerms: accepted ----

const accepted: Array<[string, unknown]> = [
  ['a hash check', { kind: 'hash', expected: H }],
  ['a maxBytes check with limit 0', { kind: 'maxBytes', limit: 0 }],
  ['a maxBytes check with a large limit', { kind: 'maxBytes', limit: Number.MAX_SAFE_INTEGER }],
  ['a deadline in UTC with milliseconds', { kind: 'deadline', by: '2026-11-21T10:00:00.000Z' }],
  ['a deadline with an offset', { kind: 'deadline', by: '2026-11-21T10:00:00+05:30' }],
  ['a deadline without seconds', { kind: 'deadline', by: '2026-11-21T10:00Z' }],
  ['a deadline with nanoseconds', { kind: 'deadline', by: '2026-11-21T10:00:00.123456789-08:00' }],
  ['a deadline on a leap day', { kind: 'deadline', by: '2028-02-29T00:00:00Z' }],
  ['a shape check with keys and pointers', { kind: 'shape', requiredFields: ['a', '/b/c', '/x~1y'] }],
  ['a predicate without params', { kind: 'predicate', name: 'non-empty' }],
  ['a predicate with empty params', { kind: 'predicate', name: 'non-empty', params: {} }],
  ['an equals predicate with a null value', { kind: 'predicate', name: 'equals', params: { pointer: '/a', value: null } }],
  ['an equals predicate on the root pointer', { kind: 'predicate', name: 'equals', params: { pointer: '', value: { a: [1] } } }],
  ['a number-range with both bounds', { kind: 'predicate', name: 'number-range', params: { pointer: '/n', min: -1.5, max: 10 } }],
  ['a number-range with equal bounds', { kind: 'predicate', name: 'number-range', params: { pointer: '/n', min: 3, max: 3 } }],
  ['a number-range without bounds', { kind: 'predicate', name: 'number-range', params: { pointer: '/n' } }],
  ['a length-range with only max', { kind: 'predicate', name: 'length-range', params: { pointer: '/s', max: 5 } }],
];
for (const [what, check] of accepted) {
  test(`validateTerms accepts ${what} and returns an equal copy`, () => {
    const input = terms([check]);
    const out = validateTerms(structuredClone(input));
    assert.deepEqual(out, input);
  });
}

test('validateTerms accepts empty checks and an empty description', () => {
  assert.deepEqual(validateTerms({ description: '', checks: [] }), { description: '', checks: [] });
});

test('validateTerms returns a copy that does not share objects with the input', () => {
  const input = terms([
    { kind: 'shape', requiredFields: ['a'] },
    { kind: 'predicate', name: 'equals', params: { pointer: '/a', value: { x: 1 } } },
  ]);
  const out = validateTerms(input);
  (input.checks[0] as { requiredFields: string[] }).requiredFields.push('b');
  (input.checks[1] as { params: { value: { x: number } } }).params.value.x = 2;
  assert.deepEqual(out.checks[0], { kind: 'shape', requiredFields: ['a'] });
  assert.deepEqual(out.checks[1], { kind: 'predicate', name: 'equals', params: { pointer: '/a', value: { x: 1 } } });
});

test('validateTerms keeps a deadline `by` exactly as given', () => {
  const out = validateTerms(terms([{ kind: 'deadline', by: '2026-11-21T12:00:00+02:00' }]));
  assert.equal((out.checks[0] as { by: string }).by, '2026-11-21T12:00:00+02:00');
});

test('validateTerms accepts 100 checks and a 10000-character description counted in code points', () => {
  const checks = Array.from({ length: 100 }, () => ({ kind: 'maxBytes', limit: 1 }));
  assert.equal(validateTerms({ description: '😀'.repeat(10_000), checks }).checks.length, 100);
});

test('validateTerms uses a custom root path in messages', () => {
  assert.throws(() => validateTerms({ description: 1, checks: [] }, 'body.terms'), isBadRequest('body.terms.description must be a string'));
});

// ---- validateTerms: refused, one row per error path ----

const refused: Array<[string, unknown, string | RegExp]> = [
  ['terms that are not an object', 'x', 'terms must be an object with "description" and "checks"'],
  ['terms that are an array', [], 'terms must be an object with "description" and "checks"'],
  ['terms that are null', null, 'terms must be an object with "description" and "checks"'],
  [
    'an unknown field on terms',
    { description: 'd', checks: [], extra: 1 },
    /^terms\.extra is not a known field \(known fields: description, checks\)$/,
  ],
  ['an unknown odd-named field on terms', { description: 'd', checks: [], 'a b': 1 }, /^terms\["a b"\] is not a known field/],
  ['a missing description', { checks: [] }, 'terms.description is required'],
  ['a non-string description', { description: 5, checks: [] }, 'terms.description must be a string'],
  [
    'a description over 10000 characters',
    { description: 'x'.repeat(10_001), checks: [] },
    'terms.description must be at most 10000 characters',
  ],
  ['missing checks', { description: 'd' }, 'terms.checks is required'],
  ['checks that are not an array', { description: 'd', checks: {} }, 'terms.checks must be an array of checks'],
  [
    'more than 100 checks',
    terms(Array.from({ length: 101 }, () => ({ kind: 'maxBytes', limit: 1 }))),
    'terms.checks must have at most 100 entries (got 101)',
  ],
  ['a check that is not an object', terms(['hash']), 'terms.checks[0] must be an object with a "kind" field'],
  ['a check that is an array', terms([[]]), 'terms.checks[0] must be an object with a "kind" field'],
  ['a check without kind', terms([{ expected: H }]), 'terms.checks[0].kind is required'],
  [
    'an unknown kind',
    terms([{ kind: 'hash', expected: H }, { kind: 'regex' }]),
    'terms.checks[1].kind must be one of: hash, maxBytes, deadline, shape, predicate, price (got "regex")',
  ],
  ['a non-string kind', terms([{ kind: 1 }]), /^terms\.checks\[0\]\.kind must be one of: .* \(got 1\)$/],
  [
    'an unknown field on a check',
    terms([
      { kind: 'maxBytes', limit: 1 },
      { kind: 'hash', expected: H, foo: 1 },
    ]),
    /^terms\.checks\[1\]\.foo is not a known field \(known fields: kind, expected\)$/,
  ],
  ['a field of another kind', terms([{ kind: 'maxBytes', limit: 1, expected: H }]), /^terms\.checks\[0\]\.expected is not a known field/],
  ['a hash without expected', terms([{ kind: 'hash' }]), 'terms.checks[0].expected is required'],
  [
    'a hash in uppercase hex',
    terms([{ kind: 'hash', expected: H.toUpperCase() }]),
    'terms.checks[0].expected must be 64 lowercase hex characters (a sha256 digest)',
  ],
  ['a hash of 63 characters', terms([{ kind: 'hash', expected: H.slice(1) }]), /^terms\.checks\[0\]\.expected must be 64 lowercase hex/],
  ['a hash that is a number', terms([{ kind: 'hash', expected: 1 }]), /^terms\.checks\[0\]\.expected must be 64 lowercase hex/],
  ['a maxBytes without limit', terms([{ kind: 'maxBytes' }]), 'terms.checks[0].limit is required'],
  ['a negative maxBytes limit', terms([{ kind: 'maxBytes', limit: -1 }]), 'terms.checks[0].limit must be a non-negative integer (bytes)'],
  [
    'a fractional maxBytes limit',
    terms([{ kind: 'maxBytes', limit: 1.5 }]),
    'terms.checks[0].limit must be a non-negative integer (bytes)',
  ],
  [
    'a maxBytes limit as a string',
    terms([{ kind: 'maxBytes', limit: '10' }]),
    'terms.checks[0].limit must be a non-negative integer (bytes)',
  ],
  [
    'an unsafe maxBytes limit',
    terms([{ kind: 'maxBytes', limit: 2 ** 53 }]),
    'terms.checks[0].limit must be a non-negative integer (bytes)',
  ],
  ['a deadline without by', terms([{ kind: 'deadline' }]), 'terms.checks[0].by is required'],
  ...(
    [
      ['a deadline without a zone', '2026-11-21T10:00:00'],
      ['a date-only deadline', '2026-11-21'],
      ['a deadline with a space separator', '2026-11-21 10:00:00Z'],
      ['a deadline with lowercase z', '2026-11-21T10:00:00z'],
      ['a deadline on February 30', '2026-02-30T00:00:00Z'],
      ['a deadline on February 29 of a common year', '2026-02-29T00:00:00Z'],
      ['a deadline on February 29 of 1900', '1900-02-29T00:00:00Z'],
      ['a deadline on April 31', '2026-04-31T00:00:00Z'],
      ['a deadline in month 13', '2026-13-01T00:00:00Z'],
      ['a deadline on day 0', '2026-01-00T00:00:00Z'],
      ['a deadline at 24:00', '2026-01-01T24:00:00Z'],
      ['a deadline at minute 60', '2026-01-01T10:60:00Z'],
      ['a deadline on a leap second', '2026-12-31T23:59:60Z'],
      ['a deadline with offset +24:00', '2026-01-01T00:00:00+24:00'],
      ['a deadline with offset minutes 60', '2026-01-01T00:00:00+05:60'],
      ['a deadline with a compact offset', '2026-01-01T00:00:00+0530'],
      ['a deadline as epoch text', '1767225600000'],
      ['a deadline in RFC 2822 form', 'Thu, 01 Jan 2026 00:00:00 GMT'],
      ['a deadline with an empty fraction', '2026-01-01T00:00:00.Z'],
    ] as const
  ).map(([what, by]): [string, unknown, string] => [
    what,
    terms([{ kind: 'deadline', by }]),
    'terms.checks[0].by must be an ISO 8601 date-time with a zone (Z or ±hh:mm), e.g. "2026-11-21T10:00:00.000Z"',
  ]),
  [
    'a deadline given as a number',
    terms([{ kind: 'deadline', by: 1767225600000 }]),
    /^terms\.checks\[0\]\.by must be an ISO 8601 date-time with a zone/,
  ],
  ['a shape without requiredFields', terms([{ kind: 'shape' }]), 'terms.checks[0].requiredFields is required'],
  [
    'requiredFields that are a string',
    terms([{ kind: 'shape', requiredFields: 'a' }]),
    'terms.checks[0].requiredFields must be an array of strings',
  ],
  [
    'empty requiredFields',
    terms([{ kind: 'shape', requiredFields: [] }]),
    'terms.checks[0].requiredFields must have 1 to 100 entries (got 0)',
  ],
  [
    '101 requiredFields',
    terms([{ kind: 'shape', requiredFields: Array.from({ length: 101 }, (_, i) => `f${i}`) }]),
    'terms.checks[0].requiredFields must have 1 to 100 entries (got 101)',
  ],
  [
    'an empty requiredFields entry',
    terms([{ kind: 'shape', requiredFields: ['a', ''] }]),
    'terms.checks[0].requiredFields[1] must be a non-empty string',
  ],
  [
    'a non-string requiredFields entry',
    terms([{ kind: 'shape', requiredFields: [3] }]),
    'terms.checks[0].requiredFields[0] must be a non-empty string',
  ],
  [
    'a requiredFields entry over 1000 characters',
    terms([{ kind: 'shape', requiredFields: ['x'.repeat(1001)] }]),
    'terms.checks[0].requiredFields[0] must be at most 1000 characters',
  ],
  [
    'a requiredFields pointer with a bad escape',
    terms([{ kind: 'shape', requiredFields: ['/a~2'] }]),
    /^terms\.checks\[0\]\.requiredFields\[0\] is not a valid JSON Pointer: it has "~" not followed by 0 or 1/,
  ],
  ['a predicate without name', terms([{ kind: 'predicate' }]), 'terms.checks[0].name is required and must be a string'],
  [
    'an unknown predicate name',
    terms([{ kind: 'predicate', name: 'regex' }]),
    'terms.checks[0].name "regex" is not a known predicate (known predicates: non-empty, equals, number-range, length-range)',
  ],
  [
    'an unknown field on a predicate check',
    terms([{ kind: 'predicate', name: 'non-empty', args: {} }]),
    /^terms\.checks\[0\]\.args is not a known field \(known fields: kind, name, params\)$/,
  ],
  [
    'params that are not an object',
    terms([{ kind: 'predicate', name: 'non-empty', params: [] }]),
    'terms.checks[0].params must be an object',
  ],
  [
    'params on non-empty',
    terms([{ kind: 'predicate', name: 'non-empty', params: { pointer: '/a' } }]),
    'terms.checks[0].params.pointer is not a known field (predicate "non-empty" takes no params)',
  ],
  [
    'equals without params',
    terms([{ kind: 'predicate', name: 'equals' }]),
    'terms.checks[0].params is required for predicate "equals" (fields: pointer, value)',
  ],
  [
    'equals without value',
    terms([{ kind: 'predicate', name: 'equals', params: { pointer: '/a' } }]),
    'terms.checks[0].params.value is required for predicate "equals"',
  ],
  [
    'equals without pointer',
    terms([{ kind: 'predicate', name: 'equals', params: { value: 1 } }]),
    'terms.checks[0].params.pointer is required for predicate "equals"',
  ],
  [
    'equals with an unknown param',
    terms([{ kind: 'predicate', name: 'equals', params: { pointer: '/a', value: 1, strict: true } }]),
    /^terms\.checks\[0\]\.params\.strict is not a known field \(known fields: pointer, value\)$/,
  ],
  [
    'a pointer that is a number',
    terms([{ kind: 'predicate', name: 'number-range', params: { pointer: 1 } }]),
    'terms.checks[0].params.pointer must be a JSON Pointer string, e.g. "/score"',
  ],
  [
    'a pointer without a leading slash',
    terms([{ kind: 'predicate', name: 'number-range', params: { pointer: 'score' } }]),
    'terms.checks[0].params.pointer must be empty or start with "/"',
  ],
  [
    'a pointer with a bad escape',
    terms([{ kind: 'predicate', name: 'length-range', params: { pointer: '/a~x' } }]),
    /^terms\.checks\[0\]\.params\.pointer has "~" not followed by 0 or 1/,
  ],
  [
    'number-range without pointer',
    terms([{ kind: 'predicate', name: 'number-range', params: { min: 1 } }]),
    'terms.checks[0].params.pointer is required for predicate "number-range"',
  ],
  [
    'a number-range min as a string',
    terms([{ kind: 'predicate', name: 'number-range', params: { pointer: '/n', min: '1' } }]),
    'terms.checks[0].params.min must be a number',
  ],
  [
    'a number-range max as null',
    terms([{ kind: 'predicate', name: 'number-range', params: { pointer: '/n', max: null } }]),
    'terms.checks[0].params.max must be a number',
  ],
  [
    'a number-range with min above max',
    terms([{ kind: 'predicate', name: 'number-range', params: { pointer: '/n', min: 5, max: 1 } }]),
    'terms.checks[0].params.min (5) must not be greater than terms.checks[0].params.max (1)',
  ],
  [
    'a length-range with a fractional min',
    terms([{ kind: 'predicate', name: 'length-range', params: { pointer: '/s', min: 1.5 } }]),
    'terms.checks[0].params.min must be a non-negative integer',
  ],
  [
    'a length-range with a negative max',
    terms([{ kind: 'predicate', name: 'length-range', params: { pointer: '/s', max: -1 } }]),
    'terms.checks[0].params.max must be a non-negative integer',
  ],
  [
    'a length-range with min above max',
    terms([{ kind: 'predicate', name: 'length-range', params: { pointer: '/s', min: 3, max: 2 } }]),
    'terms.checks[0].params.min (3) must not be greater than terms.checks[0].params.max (2)',
  ],
  [
    'length-range without params',
    terms([{ kind: 'predicate', name: 'length-range' }]),
    'terms.checks[0].params is required for predicate "length-range" (fields: pointer, min, max)',
  ],
];
for (const [what, input, message] of refused) {
  test(`validateTerms refuses ${what}, naming the path`, () => {
    assert.throws(() => validateTerms(input), isBadRequest(message));
  });
}

test('validatePredicate refuses a value that is not JSON', () => {
  assert.throws(() => validatePredicate('equals', { pointer: '/a', value: 1n }, 'p'), isBadRequest('p.params.value must be a JSON value'));
});

test('validatePredicate refuses a non-string name', () => {
  assert.throws(
    () => validatePredicate(7, undefined, 'terms.checks[2]'),
    isBadRequest('terms.checks[2].name is required and must be a string'),
  );
});

test('parseIsoDateTime returns epoch milliseconds, honouring the offset', () => {
  assert.equal(parseIsoDateTime('2026-01-01T05:30:00+05:30'), Date.UTC(2026, 0, 1));
  assert.equal(parseIsoDateTime('2000-02-29T00:00:00Z'), Date.UTC(2000, 1, 29));
  assert.equal(parseIsoDateTime(42), null);
});

// ---- evaluateChecks ----

const at = new Date('2026-11-21T10:00:00.000Z');
const base = { payload: { a: 1, b: { c: 'x' } } as unknown, contentHash: H, sizeBytes: 500, receivedAt: at };

const evaluations: Array<[string, TermCheck, Partial<typeof base>, boolean, string]> = [
  ['hash passes when the content hash matches', { kind: 'hash', expected: H }, {}, true, 'content hash matches'],
  [
    'hash passes for an uppercase content hash',
    { kind: 'hash', expected: H },
    { contentHash: H.toUpperCase() },
    true,
    'content hash matches',
  ],
  ['hash fails on another digest', { kind: 'hash', expected: H2 }, {}, false, `content hash ${H} does not match the expected ${H2}`],
  ['maxBytes passes under the limit', { kind: 'maxBytes', limit: 1000 }, {}, true, 'payload is 500 bytes, within the 1000-byte limit'],
  ['maxBytes passes exactly at the limit', { kind: 'maxBytes', limit: 500 }, {}, true, 'payload is 500 bytes, within the 500-byte limit'],
  [
    'maxBytes fails over the limit',
    { kind: 'maxBytes', limit: 1000 },
    { sizeBytes: 1234 },
    false,
    'payload is 1234 bytes, over the 1000-byte limit',
  ],
  [
    'deadline passes before the deadline',
    { kind: 'deadline', by: '2026-11-21T11:00:00Z' },
    {},
    true,
    'received at 2026-11-21T10:00:00.000Z, by the deadline 2026-11-21T11:00:00.000Z',
  ],
  [
    'deadline passes exactly at the deadline',
    { kind: 'deadline', by: '2026-11-21T12:00:00+02:00' },
    {},
    true,
    'received at 2026-11-21T10:00:00.000Z, by the deadline 2026-11-21T10:00:00.000Z',
  ],
  [
    'deadline fails one millisecond late',
    { kind: 'deadline', by: '2026-11-21T09:59:59.999Z' },
    {},
    false,
    'received at 2026-11-21T10:00:00.000Z, after the deadline 2026-11-21T09:59:59.999Z',
  ],
  [
    'deadline fails for an unparseable stored deadline',
    { kind: 'deadline', by: 'soon' },
    {},
    false,
    'deadline "soon" is not a valid date-time',
  ],
  [
    'shape passes with top-level keys and pointers',
    { kind: 'shape', requiredFields: ['a', '/b/c'] },
    {},
    true,
    'all 2 required fields present',
  ],
  ['shape passes with one field', { kind: 'shape', requiredFields: ['a'] }, {}, true, 'all 1 required field present'],
  [
    'shape treats a key without a slash literally',
    { kind: 'shape', requiredFields: ['b/c'] },
    { payload: { 'b/c': 1 } },
    true,
    'all 1 required field present',
  ],
  [
    'shape finds a pointer with ~1 and ~0 escapes',
    { kind: 'shape', requiredFields: ['/x~1y/m~0n'] },
    { payload: { 'x/y': { 'm~n': 0 } } },
    true,
    'all 1 required field present',
  ],
  [
    'shape finds a null-valued field',
    { kind: 'shape', requiredFields: ['a'] },
    { payload: { a: null } },
    true,
    'all 1 required field present',
  ],
  [
    'shape finds a pointer into an array',
    { kind: 'shape', requiredFields: ['/items/0/id'] },
    { payload: { items: [{ id: 1 }] } },
    true,
    'all 1 required field present',
  ],
  [
    'shape lists every missing field',
    { kind: 'shape', requiredFields: ['a', 'z', '/b/c', '/b/d'] },
    {},
    false,
    'missing required fields: z, /b/d',
  ],
  ['shape names one missing field in the singular', { kind: 'shape', requiredFields: ['z'] }, {}, false, 'missing required field: z'],
  [
    'shape does not count prototype keys',
    { kind: 'shape', requiredFields: ['constructor', '__proto__', '/toString'] },
    {},
    false,
    'missing required fields: constructor, __proto__, /toString',
  ],
  [
    'shape counts a "__proto__" own key from JSON',
    { kind: 'shape', requiredFields: ['__proto__'] },
    { payload: JSON.parse('{"__proto__": 1}') },
    true,
    'all 1 required field present',
  ],
  [
    'shape fails for an array payload',
    { kind: 'shape', requiredFields: ['0'] },
    { payload: [1] },
    false,
    'payload is an array, not an object',
  ],
  [
    'shape fails for a string payload',
    { kind: 'shape', requiredFields: ['a'] },
    { payload: 'a' },
    false,
    'payload is a string, not an object',
  ],
  ['shape fails for a null payload', { kind: 'shape', requiredFields: ['a'] }, { payload: null }, false, 'payload is null, not an object'],
  [
    'a predicate check reports the predicate detail',
    { kind: 'predicate', name: 'number-range', params: { pointer: '/a', max: 0 } },
    {},
    false,
    'value at /a is 1, above max 0',
  ],
];
for (const [what, check, facts, passed, detail] of evaluations) {
  test(`evaluateChecks: ${what}`, () => {
    const r = evaluateChecks([check], { ...base, ...facts });
    assert.deepEqual(r, { passed, results: [{ check, passed, detail }] });
  });
}

test('evaluateChecks returns one result per check, in order, and fails when any fails', () => {
  const checks: TermCheck[] = [
    { kind: 'hash', expected: H },
    { kind: 'maxBytes', limit: 10 },
    { kind: 'shape', requiredFields: ['a'] },
  ];
  const r = evaluateChecks(checks, base);
  assert.equal(r.passed, false);
  assert.deepEqual(
    r.results.map((x) => [x.check.kind, x.passed]),
    [
      ['hash', true],
      ['maxBytes', false],
      ['shape', true],
    ],
  );
});

test('evaluateChecks passes an empty list of checks', () => {
  assert.deepEqual(evaluateChecks([], base), { passed: true, results: [] });
});

test('evaluateChecks passes when every check passes', () => {
  const t: Terms = validateTerms(
    terms([
      { kind: 'hash', expected: H },
      { kind: 'predicate', name: 'non-empty' },
    ]),
  );
  assert.equal(evaluateChecks(t.checks, base).passed, true);
});

test('evaluateChecks fails, without throwing, a check it cannot evaluate', () => {
  const bogus = [{ kind: 'regex' } as unknown as TermCheck, { kind: 'predicate', name: 'nope' } as unknown as TermCheck];
  const r = evaluateChecks(bogus, base);
  assert.equal(r.passed, false);
  assert.equal(r.results[0].detail, 'unknown check kind "regex"');
  assert.equal(r.results[1].detail, 'check could not be evaluated: unknown predicate "nope"');
});

// ---- predicates ----

const predicateRows: Array<[string, string, Record<string, unknown> | undefined, unknown, boolean, string]> = [
  ['non-empty passes an object with a key', 'non-empty', undefined, { a: 1 }, true, 'payload is not empty'],
  ['non-empty passes zero', 'non-empty', undefined, 0, true, 'payload is not empty'],
  ['non-empty passes false', 'non-empty', {}, false, true, 'payload is not empty'],
  ['non-empty passes a space', 'non-empty', undefined, ' ', true, 'payload is not empty'],
  ['non-empty fails null', 'non-empty', undefined, null, false, 'payload is null'],
  ['non-empty fails the empty string', 'non-empty', undefined, '', false, 'payload is an empty string'],
  ['non-empty fails the empty array', 'non-empty', undefined, [], false, 'payload is an empty array'],
  ['non-empty fails the empty object', 'non-empty', undefined, {}, false, 'payload is an empty object'],
  [
    'equals passes JCS-equal objects whatever the key order',
    'equals',
    { pointer: '/o', value: { b: 2, a: 1 } },
    { o: { a: 1, b: 2 } },
    true,
    'value at /o equals {"a":1,"b":2}',
  ],
  [
    'equals passes 1.0 and 1 as the same number',
    'equals',
    { pointer: '/n', value: 1 },
    JSON.parse('{"n": 1.0}'),
    true,
    'value at /n equals 1',
  ],
  ['equals passes null against null', 'equals', { pointer: '/a', value: null }, { a: null }, true, 'value at /a equals null'],
  [
    'equals compares the whole payload at the root pointer',
    'equals',
    { pointer: '', value: 'ok' },
    'ok',
    true,
    'value at the payload root equals "ok"',
  ],
  [
    'equals fails a different value',
    'equals',
    { pointer: '/status', value: 'done' },
    { status: 'pending' },
    false,
    'value at /status is "pending", expected "done"',
  ],
  ['equals fails a string against a number', 'equals', { pointer: '/n', value: 1 }, { n: '1' }, false, 'value at /n is "1", expected 1'],
  ['equals fails a missing value', 'equals', { pointer: '/x', value: 1 }, {}, false, 'no value at /x; expected 1'],
  [
    'equals cuts a long value in its detail',
    'equals',
    { pointer: '/s', value: 'a' },
    { s: 'x'.repeat(200) },
    false,
    `value at /s is "${'x'.repeat(79)}…, expected "a"`,
  ],
  [
    'number-range passes inside the bounds',
    'number-range',
    { pointer: '/score', min: 0, max: 10 },
    { score: 7 },
    true,
    'value at /score is 7, within 0..10',
  ],
  [
    'number-range includes the min',
    'number-range',
    { pointer: '/score', min: 0, max: 10 },
    { score: 0 },
    true,
    'value at /score is 0, within 0..10',
  ],
  [
    'number-range includes the max',
    'number-range',
    { pointer: '/score', min: 0, max: 10 },
    { score: 10 },
    true,
    'value at /score is 10, within 0..10',
  ],
  [
    'number-range with only a min',
    'number-range',
    { pointer: '/score', min: 5 },
    { score: 5.5 },
    true,
    'value at /score is 5.5, at least min 5',
  ],
  [
    'number-range with only a max',
    'number-range',
    { pointer: '/score', max: 5 },
    { score: -3 },
    true,
    'value at /score is -3, at most max 5',
  ],
  [
    'number-range without bounds checks the type',
    'number-range',
    { pointer: '/score' },
    { score: 1e21 },
    true,
    'value at /score is 1e+21, a number',
  ],
  [
    'number-range fails above max',
    'number-range',
    { pointer: '/score', max: 10 },
    { score: 12 },
    false,
    'value at /score is 12, above max 10',
  ],
  [
    'number-range fails below min',
    'number-range',
    { pointer: '/score', min: 15, max: 20 },
    { score: 12 },
    false,
    'value at /score is 12, below min 15',
  ],
  [
    'number-range fails a numeric string',
    'number-range',
    { pointer: '/score', min: 0 },
    { score: '5' },
    false,
    'value at /score is a string, not a number',
  ],
  [
    'number-range fails a boolean',
    'number-range',
    { pointer: '/score' },
    { score: true },
    false,
    'value at /score is a boolean, not a number',
  ],
  ['number-range fails null', 'number-range', { pointer: '/score' }, { score: null }, false, 'value at /score is null, not a number'],
  [
    'number-range fails a missing value',
    'number-range',
    { pointer: '/score', min: 0, max: 10 },
    {},
    false,
    'no value at /score; expected a number within 0..10',
  ],
  [
    'number-range fails a missing value without bounds',
    'number-range',
    { pointer: '/score' },
    {},
    false,
    'no value at /score; expected a number',
  ],
  [
    'length-range counts code points, not UTF-16 units',
    'length-range',
    { pointer: '/s', max: 2 },
    { s: '😀é' },
    true,
    'string at /s has 2 characters, at most max 2',
  ],
  [
    'length-range passes one character in the singular',
    'length-range',
    { pointer: '/s', min: 1 },
    { s: 'a' },
    true,
    'string at /s has 1 character, at least min 1',
  ],
  [
    'length-range counts array items',
    'length-range',
    { pointer: '/items', min: 1, max: 3 },
    { items: [1, 2] },
    true,
    'array at /items has 2 items, within 1..3',
  ],
  [
    'length-range names one item in the singular',
    'length-range',
    { pointer: '/items', max: 3 },
    { items: [[]] },
    true,
    'array at /items has 1 item, at most max 3',
  ],
  ['length-range without bounds checks the type', 'length-range', { pointer: '' }, [], true, 'array at the payload root has 0 items'],
  [
    'length-range fails a string over max',
    'length-range',
    { pointer: '/s', max: 3 },
    { s: 'abcd' },
    false,
    'string at /s has 4 characters, above max 3',
  ],
  [
    'length-range fails an empty string under min',
    'length-range',
    { pointer: '/s', min: 1 },
    { s: '' },
    false,
    'string at /s has 0 characters, below min 1',
  ],
  [
    'length-range fails an array over max',
    'length-range',
    { pointer: '/items', max: 10 },
    { items: Array(12).fill(0) },
    false,
    'array at /items has 12 items, above max 10',
  ],
  [
    'length-range fails an object',
    'length-range',
    { pointer: '/o', max: 10 },
    { o: {} },
    false,
    'value at /o is an object, not a string or array',
  ],
  ['length-range fails a number', 'length-range', { pointer: '/o' }, { o: 5 }, false, 'value at /o is a number, not a string or array'],
  [
    'length-range fails a missing value',
    'length-range',
    { pointer: '/o', min: 1, max: 2 },
    {},
    false,
    'no value at /o; expected a string or array of length within 1..2',
  ],
  [
    'length-range fails a missing value without bounds',
    'length-range',
    { pointer: '/o' },
    {},
    false,
    'no value at /o; expected a string or array',
  ],
  [
    'a pointer never reaches the prototype',
    'equals',
    { pointer: '/constructor', value: null },
    {},
    false,
    'no value at /constructor; expected null',
  ],
];
for (const [what, name, params, payload, passed, detail] of predicateRows) {
  test(`predicate ${what}`, () => {
    assert.deepEqual(evaluatePredicate(name, params, payload), { passed, detail });
  });
}

test('evaluatePredicate throws for a name that was never validated', () => {
  assert.throws(() => evaluatePredicate('regex', undefined, {}), /unknown predicate "regex"/);
});
