import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError } from '../../src/errors.ts';
import { describePointer, parsePointer, pointerProblem, resolvePointer } from '../../src/terms/pointer.ts';

const parsed: Array<[string, string[], string]> = [
  ['', [], 'the empty pointer is the whole document'],
  ['/', [''], 'a lone slash is the empty-string key'],
  ['/a/b', ['a', 'b'], 'slashes separate tokens'],
  ['/a~1b', ['a/b'], '~1 unescapes to a slash'],
  ['/m~0n', ['m~n'], '~0 unescapes to a tilde'],
  ['/~01', ['~1'], '~01 unescapes to "~1", not to a slash'],
  ['/~10', ['/0'], '~10 unescapes to "/0"'],
  ['/a//b', ['a', '', 'b'], 'an empty token between slashes is kept'],
  ['/0/-', ['0', '-'], 'index and dash tokens stay strings'],
];
for (const [p, tokens, what] of parsed) {
  test(`parsePointer: ${what} (${JSON.stringify(p)})`, () => {
    assert.deepEqual(parsePointer(p), tokens);
    assert.equal(pointerProblem(p), null);
  });
}

const invalid: Array<[string, RegExp, string]> = [
  ['a/b', /must be empty or start with "\/"/, 'a pointer without a leading slash'],
  ['#/a', /must be empty or start with "\/"/, 'a URI fragment pointer'],
  ['/a~2', /"~" not followed by 0 or 1/, 'an unknown escape'],
  ['/a~', /"~" not followed by 0 or 1/, 'a trailing tilde'],
  ['/~/x', /"~" not followed by 0 or 1/, 'a tilde before a slash'],
];
for (const [p, message, what] of invalid) {
  test(`parsePointer refuses ${what} with a 400`, () => {
    assert.throws(
      () => parsePointer(p),
      (err: unknown) => err instanceof AppError && err.code === 'bad_request' && message.test(err.message),
    );
    assert.match(pointerProblem(p) ?? '', message);
  });
}

test('pointerProblem reports a non-string', () => {
  assert.equal(pointerProblem(5), 'must be a string');
});

const doc = JSON.parse(`{
  "a": {"b": {"c": 42}},
  "a/b": 1,
  "m~n": 2,
  "": "empty key",
  "list": [10, {"x": null}, [true]],
  "zero": 0,
  "nothing": null,
  "f": false,
  "__proto__": "own proto key"
}`) as unknown;

const resolved: Array<[string, unknown, string]> = [
  ['', doc, 'the empty pointer resolves to the whole document'],
  ['/a/b/c', 42, 'nested objects'],
  ['/a~1b', 1, 'a key containing a slash via ~1'],
  ['/m~0n', 2, 'a key containing a tilde via ~0'],
  ['/', 'empty key', 'the empty-string key'],
  ['/list/0', 10, 'the first array element'],
  ['/list/1/x', null, 'a null inside an array element (null is found)'],
  ['/list/2/0', true, 'nested arrays'],
  ['/zero', 0, 'a falsy zero'],
  ['/nothing', null, 'a null value'],
  ['/f', false, 'false'],
  ['/__proto__', 'own proto key', 'a "__proto__" key that JSON.parse made an own property'],
];
for (const [p, value, what] of resolved) {
  test(`resolvePointer finds ${what}`, () => {
    assert.deepEqual(resolvePointer(doc, p), { found: true, value });
  });
}

const missing: Array<[unknown, string, string]> = [
  [doc, '/missing', 'a missing key'],
  [doc, '/a/b/c/d', 'a path through a number'],
  [doc, '/list/3', 'an index past the end'],
  [doc, '/list/-', 'the "-" past-the-end token'],
  [doc, '/list/01', 'an index with a leading zero'],
  [doc, '/list/1e0', 'an index in exponent form'],
  [doc, '/list/ 1', 'an index with whitespace'],
  [doc, '/list/length', "an array's length property"],
  [doc, '/list/99999999999999999999', 'a huge index'],
  [doc, '/a/constructor', '"constructor" from the prototype'],
  [doc, '/a/toString', '"toString" from the prototype'],
  [doc, '/a/__proto__', '"__proto__" on an object without that own key'],
  [doc, '/a/hasOwnProperty', '"hasOwnProperty" from the prototype'],
  [{}, '/__proto__/toString', 'a walk through "__proto__" into Object.prototype'],
  ['text', '/length', 'a property of a string'],
  [null, '/a', 'anything under null'],
  [undefined, '', 'an undefined document'],
  [Object.create({ inherited: 1 }), '/inherited', 'an inherited property'],
];
for (const [d, p, what] of missing) {
  test(`resolvePointer does not find ${what}`, () => {
    assert.deepEqual(resolvePointer(d, p), { found: false });
  });
}

test('resolvePointer accepts already-parsed tokens', () => {
  assert.deepEqual(resolvePointer(doc, ['a/b']), { found: true, value: 1 });
});

test('resolvePointer throws a 400 for a malformed pointer string', () => {
  assert.throws(
    () => resolvePointer(doc, 'a'),
    (err: unknown) => err instanceof AppError && err.code === 'bad_request',
  );
});

test('an own property holding undefined is not found', () => {
  assert.deepEqual(resolvePointer({ a: undefined }, '/a'), { found: false });
});

test('an accessor property is never invoked', () => {
  let called = false;
  const o = Object.defineProperty({}, 'g', {
    get: () => {
      called = true;
      return 1;
    },
    enumerable: true,
  });
  assert.deepEqual(resolvePointer(o, '/g'), { found: false });
  assert.equal(called, false);
});

test('describePointer names the root for the empty pointer', () => {
  assert.equal(describePointer(''), 'the payload root');
  assert.equal(describePointer('/a'), '/a');
});
