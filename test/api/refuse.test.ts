// Refused instead of changed: metadata keys that name parts of every JavaScript object, and integers
// a JSON number cannot carry exactly (I-JSON, RFC 7493 §2.2), anywhere in a body; and what every
// answer carries or leaves out: nosniff, and no echo of the requested path (docs/security.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeStores, expectError } from '../harness.ts';
import { funded, PASSING_TERMS } from '../fixtures.ts';
import { parseStrictJson } from '../../src/http/strictJson.ts';

export const REFUSE_TRIED = { bodies: 0 };

test('parseStrictJson: integers within ±(2^53−1) pass; beyond, anywhere, are refused naming the path', () => {
  for (const ok of ['9007199254740991', '-9007199254740991', '{"a":[1,2.5,-0,1e3]}', '0.1', '1.7976931348623157e-308']) {
    assert.doesNotThrow(() => parseStrictJson(ok), ok);
    REFUSE_TRIED.bodies++;
  }
  const bad: Array<[string, RegExp]> = [
    ['9007199254740992', /^body is an integer outside/],
    ['-9007199254740993', /^body is an integer outside/],
    ['{"a":{"b":[0,1,9007199254740993]}}', /^a\.b\[2\] is an integer outside ±\(2\^53−1\)/],
    ['{"x":1e300}', /^x is an integer outside/],
    ['{"x":1e400}', /^x is a number beyond the range/],
    ['[{"k":-1e400}]', /^\[0\]\.k is a number beyond the range/],
    ['{"payload":{"n":12345678901234567890}}', /^payload\.n is an integer outside/],
  ];
  for (const [text, msg] of bad) {
    assert.throws(
      () => parseStrictJson(text),
      (e: Error) => msg.test(e.message),
      text,
    );
    REFUSE_TRIED.bodies++;
  }
});

describeStores('refused instead of changed', (h) => {
  test('metadata keys __proto__, constructor and prototype are 400 naming the key; nothing is created', async () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const body = `{"amount":"1","asset":"USDC","terms":${JSON.stringify(PASSING_TERMS)},"payer":{"publicKey":"${'a'.repeat(64)}"},"payee":{"publicKey":"${'b'.repeat(64)}"},"metadata":{"order":"7","${key}":"x"}}`;
      const r = await h().req('POST', '/v1/escrows', body);
      assert.match(expectError(r, 400, 'bad_request'), new RegExp(`^metadata\\.${key} key "${key}" is reserved`));
      REFUSE_TRIED.bodies++;
    }
    assert.equal((await h().req('GET', '/v1/escrows')).body.escrows.length, 0);
  });

  test('an integer beyond 2^53 in a delivery payload is 400 naming its path, not rounded before hashing', async () => {
    const e = await funded(h());
    const r = await h().req(
      'POST',
      `/v1/escrows/${e.id}/delivery`,
      `{"agentId":"${e.payee.id}","payload":{"title":"t","big":9007199254740993}}`,
    );
    assert.match(expectError(r, 400, 'bad_request'), /^payload\.big is an integer outside ±\(2\^53−1\)/);
    REFUSE_TRIED.bodies++;
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'funded');
  });

  test('every answer carries X-Content-Type-Options: nosniff; a 404 does not echo the path', async () => {
    for (const [m, p] of [
      ['GET', '/health'],
      ['GET', '/v1/escrows'],
      ['GET', '/v1/openapi.json'],
      ['GET', '/docs/errors'],
      ['POST', '/v1/agents'],
      ['OPTIONS', '/v1/escrows'],
      ['DELETE', '/health'],
    ]) {
      const r = await h().req(m, p);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff', `${m} ${p}`);
    }
    for (const [m, p] of [
      ['GET', '/v1/<script>alert(1)</script>'],
      ['OPTIONS', '/nowhere/evil-text'],
      ['POST', '/v1/Click-here-http%3A%2F%2Fevil.example'],
    ]) {
      const r = await h().req(m, p);
      const msg = expectError(r, 404, 'not_found');
      assert.doesNotMatch(msg, /script|evil|nowhere|Click/i, msg);
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    }
  });
});
