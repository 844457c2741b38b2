// Input hardening (docs/protocol.md §2.6): NUL, lone surrogates and duplicate keys are
// 400 naming where, on every route, and no generated input at all reaches a 5xx.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describeStores, expectError, type Harness } from '../harness.ts';
import { escrow, failedDelivery, PASSING_TERMS } from '../fixtures.ts';
import { findDuplicateKey, parseStrictJson, numberProblem } from '../../src/http/strictJson.ts';

/** POSTs a raw JSON text (so escapes such as \ud800 reach the server as written). */
const raw = (h: Harness, path: string, text: string) => h.req('POST', path, text, { 'content-type': 'application/json' });

describeStores('strict request JSON (I-JSON, RFC 7493)', (h) => {
  test('a NUL character in any body string is 400 bad_request naming the field', async () => {
    const a = await raw(h(), '/v1/agents', '{"label": "a\\u0000b"}');
    assert.match(expectError(a, 400, 'bad_request'), /^label must not contain the NUL character/);
    const e = await raw(
      h(),
      '/v1/escrows',
      JSON.stringify({
        amount: '1',
        asset: 'USDC',
        terms: { description: 'x\u0000', checks: [] },
        payerAgentId: 'agt_x',
        payeeAgentId: 'agt_y',
      }),
    );
    assert.match(expectError(e, 400, 'bad_request'), /^terms\.description must not contain the NUL/);
    const ids = await raw(
      h(),
      '/v1/escrows',
      JSON.stringify({ amount: '1', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: 'agt_\u0000', payeeAgentId: 'agt_y' }),
    );
    assert.match(expectError(ids, 400, 'bad_request'), /^payerAgentId must not contain the NUL/);
    const nested = await raw(
      h(),
      '/v1/escrows',
      JSON.stringify({ terms: { checks: [{ kind: 'shape', requiredFields: ['ok', 'n\u0000'] }] } }),
    );
    assert.match(expectError(nested, 400, 'bad_request'), /^terms\.checks\[0\]\.requiredFields\[1\] must not contain the NUL/);
    const key = await raw(h(), '/v1/agents', '{"la\\u0000bel": "x"}');
    assert.match(expectError(key, 400, 'bad_request'), /^a key in body must not contain the NUL/);
  });

  test('a lone UTF-16 surrogate in any body string (value or key) is 400 naming the field', async () => {
    for (const s of ['\\ud800', '\\udfff', 'a\\udc00b', '\\ud83d\\ud83d']) {
      const r = await raw(h(), '/v1/agents', `{"label": "${s}"}`);
      assert.match(expectError(r, 400, 'bad_request'), /^label must not contain a lone UTF-16 surrogate/, s);
    }
    const deep = await raw(
      h(),
      '/v1/escrows',
      '{"terms": {"description": "ok", "checks": [{"kind": "equals", "params": {"pointer": "/a", "value": ["x", "\\udead"]}}]}}',
    );
    assert.match(expectError(deep, 400, 'bad_request'), /^terms\.checks\[0\]\.params\.value\[1\] must not contain a lone/);
    // A well-formed pair (an emoji) is fine.
    const ok = await raw(h(), '/v1/agents', '{"label": "\\ud83d\\ude00"}');
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.label, '😀');
  });

  test('a duplicate key anywhere in a JSON body is 400 naming its path', async () => {
    const top = await raw(h(), '/v1/agents', '{"label": "a", "label": "b"}');
    assert.match(
      expectError(top, 400, 'bad_request'),
      /^label appears twice in one object of the request body; duplicate keys are refused/,
    );
    const e = await escrow(h());
    const nested = await raw(
      h(),
      `/v1/escrows/${e.id}/delivery`,
      `{"agentId": "${e.payee.id}", "payload": {"items": [{"a": 1}, {"b": 1, "c": {"d": 1, "d": 2}}]}}`,
    );
    assert.match(expectError(nested, 400, 'bad_request'), /^payload\.items\[1\]\.c\.d appears twice/);
    // Keys equal only after unescaping are the same key.
    const escaped = await raw(h(), '/v1/agents', '{"label": "a", "\\u006cabel": "b"}');
    assert.match(expectError(escaped, 400, 'bad_request'), /^label appears twice/);
    // The same key in sibling objects is not a duplicate.
    const siblings = await raw(h(), '/v1/agents', '{"label": "fine"}');
    assert.equal(siblings.status, 201);
    // Nothing was written by the refused delivery.
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'created');
  });

  test('objects whose own toString/valueOf are not functions are 400 naming the field, on every JSON route (were 500s)', async () => {
    // superstruct prints a refused value with `${value}`; these objects cannot become strings that way.
    const odd = ['{"toString": ""}', '{"valueOf": 1, "toString": {}}', '[{"toString": ""}]', '[[{"valueOf": null, "toString": []}]]'];
    const a = await raw(h(), '/v1/agents', `{"label": ${odd[0]}}`);
    assert.match(expectError(a, 400, 'bad_request'), /^label expected a string/);
    assert.equal(expectError(await raw(h(), '/v1/agents', odd[2]), 400, 'bad_request'), 'request body must be a JSON object');
    const key = await raw(h(), '/v1/agents', '{"toString": "x"}');
    assert.equal(expectError(key, 400, 'bad_request'), 'toString is not a known field');
    const e = await escrow(h());
    for (const def of h().app.routes.filter((r) => r.method === 'POST' || r.method === 'DELETE')) {
      const path = def.path.replace(/:(\w+)/g, e.id);
      for (const body of [...odd, `{"label": ${odd[3]}, "agentId": ${odd[1]}, "payload": ${odd[0]}, "metadata": {"k": ${odd[2]}}}`]) {
        const r = await h().app.fetch(
          new Request(`http://test.local${path}`, { method: def.method, body, headers: { 'content-type': 'application/json' } }),
          { ip: '127.0.0.1' },
        );
        const text = await r.text();
        assert.ok(r.status < 500, `${def.method} ${path} ${body} → ${r.status} ${text}`);
      }
    }
  });

  test("a body that is not JSON keeps getting 400, including the README's curl -d form content type", async () => {
    expectError(
      await h().req('POST', '/v1/agents', 'label=x', { 'content-type': 'application/x-www-form-urlencoded' }),
      400,
      'bad_request',
    );
    const curl = await h().req('POST', '/v1/agents', '{"label": "curl"}', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(curl.status, 201, curl.text);
  });

  test('NUL in a path or query parameter is 400 naming the parameter', async () => {
    const p = await h().req('GET', '/v1/escrows/esc_%00x');
    assert.match(expectError(p, 400, 'bad_request'), /^path parameter id must not contain the NUL/);
    const q = await h().req('GET', '/v1/escrows?state=%00');
    assert.match(expectError(q, 400, 'bad_request'), /^query parameter state must not contain the NUL/);
    const name = await h().req('GET', '/v1/log/entries?st%00art=1');
    assert.match(expectError(name, 400, 'bad_request'), /^a query parameter name must not contain the NUL/);
  });

  test('text fields of disputes refuse lone surrogates (these were 500s before)', async () => {
    const e = await failedDelivery(h());
    const r = await raw(h(), `/v1/escrows/${e.id}/dispute`, `{"agentId": "${e.payer.id}", "reason": "bad \\ud800"}`);
    assert.match(expectError(r, 400, 'bad_request'), /^reason must not contain a lone/);
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'delivered');
  });
});

test('the duplicate-key finder finds exactly the duplicates inserted into generated JSON, and names them', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), fc.boolean(), (v, dup) => {
      // Numbers I-JSON refuses (integers beyond 2^53) are a refusal of their own, tested in refuse.test.ts.
      let text = JSON.stringify(v, (_k, x) => (typeof x === 'number' && numberProblem(x) ? 0 : x));
      let firstKey: string | undefined;
      if (dup && v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
        firstKey = Object.keys(v)[0];
        text = `{${JSON.stringify(firstKey)}:0,${text.slice(1)}`;
      }
      const found = findDuplicateKey(text);
      if (firstKey === undefined) {
        assert.equal(found, null, text);
        assert.deepEqual(parseStrictJson(text), JSON.parse(text));
      } else {
        assert.deepEqual(found, [firstKey], text);
        assert.throws(() => parseStrictJson(text), /appears twice/);
      }
    }),
    { numRuns: Number(process.env.FUZZ_RUNS ?? 500) },
  );
});

/** Strings that have broken services: NUL, lone surrogates, huge numbers, ids, paths, controls. */
const nasty = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '\u0000',
    '\ud800',
    '\udfff',
    'agt_\u0000',
    'esc_',
    'esc_01aaaaaaaaaaaaaaaaaaaaaaaa',
    '/a/b',
    '',
    ' ',
    '9'.repeat(400),
    '-1',
    '1e309',
    'USDC',
    '__proto__',
    'constructor',
    'toString',
    'valueOf',
    '%00',
    '../..',
    '\r\n',
  ),
  fc.string({ unit: 'binary' }),
);
const jsonish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    nasty,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(
        nasty,
        fc.constantFrom(
          'amount',
          'asset',
          'terms',
          'payerAgentId',
          'payeeAgentId',
          'agentId',
          'payload',
          'label',
          'url',
          'outcome',
          'advanceSeconds',
          'count',
          'signatures',
          'agentIds',
          'shares',
          'reason',
          'note',
          'principal',
          'caps',
          'signature',
        ),
      ),
      tie('value'),
      { maxKeys: 5 },
    ),
  ),
})).value;

/** A JSON text from a value, sometimes with a duplicated first key, sometimes cut short. */
const bodyText = fc.tuple(jsonish, fc.nat(3)).map(([v, mode]) => {
  const t = JSON.stringify(v) ?? 'null';
  if (mode === 1 && t.startsWith('{"')) return t.replace(/^\{("(?:[^"\\]|\\.)*"):/, '{$1:1,$1:');
  if (mode === 2) return t.slice(0, Math.max(1, t.length >> 1));
  return t;
});

/** A path segment; a lone surrogate (which encodeURIComponent refuses) goes as its invalid UTF-8 bytes. */
const encodePart = (s: string) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
};

describeStores(
  'generated input on every route never gets a 5xx',
  (h) => {
    test('random JSON bodies, path parameters and query strings, on every route of app.routes', async () => {
      const routes = h().app.routes;
      const e = await escrow(h());
      const seen = new Set<number>();
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...routes),
          fc.option(bodyText, { nil: undefined }),
          fc.oneof(nasty, fc.constant(e.id)),
          fc.array(fc.tuple(nasty, nasty), { maxLength: 3 }),
          fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND'),
          async (def, body, id, query, otherMethod) => {
            const path = def.path.replace(/:(\w+)/g, () => encodePart(id));
            const qs = query.length ? '?' + new URLSearchParams(query).toString() : '';
            const method: string = ['PUT', 'PROPFIND', 'OPTIONS', 'HEAD'].includes(otherMethod) ? otherMethod : def.method;
            const res = await h().app.fetch(
              new Request(`http://test.local${path}${qs}`, {
                method,
                ...(body !== undefined && method !== 'GET' && method !== 'HEAD' ? { body } : {}),
                headers: { 'content-type': 'application/json' },
              }),
              { ip: '127.0.0.1' },
            );
            const text = await res.text();
            seen.add(res.status);
            assert.ok(res.status < 500, `${method} ${path}${qs} ${JSON.stringify(body)} → ${res.status} ${text}`);
            if (res.status >= 400 && method !== 'HEAD') assert.ok(JSON.parse(text).error.code, text);
          },
        ),
        { numRuns: Number(process.env.FUZZ_RUNS ?? 400), seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
      );
      // The generator reached past validation as well as being refused by it.
      assert.ok(seen.has(400) && [...seen].some((s) => s < 300), `statuses seen: ${[...seen].join(', ')}`);
    });
  },
  { RATE_LIMIT_MAX: '1000000000', PUBLIC_RATE_LIMIT_MAX: '1000000000', VERIFY_RATE_LIMIT_MAX: '1000000000' },
);
