import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, makeHarness, STORES } from '../harness.ts';

describeStores('foundation', (h) => {
  test('GET /health answers ok with the active issuer key, version and uptime', async () => {
    const res = await h().req('GET', '/health');
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.service, 'escrow-settlement');
    assert.match(res.body.issuer, /^[0-9a-f]{64}$/);
    assert.equal(res.body.version, '0.5.0');
    assert.equal(typeof res.body.uptimeSeconds, 'number');
  });

  test('the issuer document lists the active key with its keyId derived from the public key', async () => {
    const health = await h().req('GET', '/health');
    const res = await h().req('GET', '/.well-known/proof-issuer.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.keys.length, 1);
    const [k] = res.body.keys;
    assert.equal(k.publicKey, health.body.issuer);
    assert.equal(k.alg, 'ed25519');
    assert.match(k.keyId, /^iss_[0-9a-f]{16}$/);
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', Buffer.from(k.publicKey, 'hex')));
    assert.equal(k.keyId, 'iss_' + Buffer.from(digest).toString('hex').slice(0, 16));
    assert.equal(new Date(k.validFrom).toISOString(), k.validFrom);
    assert.equal(k.validUntil, undefined);
  });

  test('POST /v1/agents returns an agent with its public key and never a private key', async () => {
    const res = await h().req('POST', '/v1/agents', { label: 'buyer' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^agt_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(res.body.label, 'buyer');
    assert.match(res.body.publicKey, /^[0-9a-f]{64}$/);
    assert.deepEqual(Object.keys(res.body).sort(), ['id', 'label', 'publicKey']);
    const noBody = await h().req('POST', '/v1/agents');
    assert.equal(noBody.status, 201);
    assert.equal(noBody.body.label, '');
  });

  const badBodies: Array<[string, string, RegExp]> = [
    ['invalid JSON', '{"label":', /not valid JSON/],
    ['a non-object body', '[1,2]', /must be a JSON object|expected an object/],
    ['a wrong-typed field', '{"label":5}', /^label expected a string/],
    ['an unknown field', '{"label":"x","admin":true}', /^admin is not a known field/],
    ['an over-long label', JSON.stringify({ label: 'x'.repeat(201) }), /^label .*200/],
    ['a body nested 10,000 levels deep', '['.repeat(10000) + ']'.repeat(10000), /nested deeper/],
  ];
  for (const [what, body, msg] of badBodies) {
    test(`POST /v1/agents with ${what} is 400 bad_request naming the problem`, async () => {
      const res = await h().req('POST', '/v1/agents', body);
      assert.match(expectError(res, 400, 'bad_request'), msg);
    });
  }

  test('a body over 1 MB is 413 payload_too_large, whether declared or streamed', async () => {
    const big = JSON.stringify({ label: 'x'.repeat(1024 * 1024 + 10) });
    expectError(await h().req('POST', '/v1/agents', big), 413, 'payload_too_large');
    // Streamed without a content-length: refused while reading, after about 1 MB, not at the end.
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent > 50 * 1024 * 1024) return c.close();
        sent += 64 * 1024;
        c.enqueue(new Uint8Array(64 * 1024).fill(32));
      },
    });
    const res = await h().app.fetch(new Request('http://t/v1/agents', { method: 'POST', body: stream, duplex: 'half' } as RequestInit));
    assert.equal(res.status, 413);
    assert.ok(sent < 3 * 1024 * 1024, `read ${sent} bytes before refusing`);
  });

  test('unknown routes are 404 not_found; a known path with another method is 405 (docs/protocol.md §9.5)', async () => {
    expectError(await h().req('GET', '/v1/nothing-here'), 404, 'not_found');
    expectError(await h().req('DELETE', '/health'), 405, 'method_not_allowed');
    expectError(await h().req('PUT', '/v1/agents', {}), 405, 'method_not_allowed');
  });

  test('every response carries x-request-id, echoing a client-supplied one', async () => {
    const a = await h().req('GET', '/health');
    assert.match(a.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
    const b = await h().req('GET', '/v1/nope', undefined, { 'x-request-id': 'trace-123' });
    assert.equal(b.headers.get('x-request-id'), 'trace-123');
  });
});

for (const kind of STORES) {
  test(`hosted mode requires the bearer key on /v1 and compares it exactly [${kind}]`, async () => {
    const h = await makeHarness(kind, { API_KEY: 'root-secret-0123456789' });
    try {
      expectError(await h.req('POST', '/v1/agents', {}), 401, 'unauthorized');
      expectError(await h.req('POST', '/v1/agents', {}, { authorization: 'Bearer wrong-secret-0123456789' }), 401, 'unauthorized');
      expectError(await h.req('POST', '/v1/agents', {}, { authorization: 'Bearer root-secret-012345678' }), 401, 'unauthorized');
      expectError(await h.req('POST', '/v1/agents', {}, { authorization: 'Basic root-secret-0123456789' }), 401, 'unauthorized');
      const ok = await h.req('POST', '/v1/agents', {}, { authorization: 'Bearer root-secret-0123456789' });
      assert.equal(ok.status, 201);
      // Public routes need no key.
      assert.equal((await h.req('GET', '/health')).status, 200);
      assert.equal((await h.req('GET', '/.well-known/proof-issuer.json')).status, 200);
    } finally {
      await h.close();
    }
  });
}

test('a database that cannot be reached makes /health 503 with ok false, and no text leaks', async () => {
  const h = await makeHarness('pglite');
  await h.db.close();
  const res = await h.req('GET', '/health');
  assert.equal(res.status, 503);
  assert.equal(res.body.ok, false);
  const agent = await h.req('POST', '/v1/agents', {});
  assert.equal(agent.status, 500);
  assert.deepEqual(Object.keys(agent.body.error).sort(), ['code', 'docsUrl', 'message']);
  assert.doesNotMatch(agent.text, /pglite|closed|INSERT|stack/i);
});
