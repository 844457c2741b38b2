import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeStores, expectError } from '../harness.ts';
import { agent, clientKey, escrow, failedDelivery, funded, nodeVerifyHex, PASSING_TERMS, settled } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describeStores('escrow lifecycle', (h) => {
  test('the happy path: create → fund → passing delivery settles and returns a proof an independent Ed25519 verifies', async () => {
    const e = await escrow(h(), { amount: '12.500000' });
    assert.equal(e.escrow.state, 'created');
    assert.equal(e.escrow.amount, '12.5');
    assert.equal(e.escrow.custody.status, 'unfunded');
    assert.equal(e.escrow.deadlineAt, undefined);
    assert.deepEqual(e.escrow.timeouts, {
      deliverWithinSeconds: 86400,
      resolveWithinSeconds: 86400,
      decideWithinSeconds: 259200,
      timeoutRuling: 'refund',
      refundWithinSeconds: 2592000,
    });

    const f = await h().req('POST', `/v1/escrows/${e.id}/fund`);
    assert.equal(f.body.state, 'funded');
    assert.equal(f.body.custody.status, 'locked');
    assert.equal(Date.parse(f.body.deadlineAt) - Date.parse(f.body.updatedAt), 86400 * 1000);

    const d = await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'report' } });
    assert.equal(d.status, 201, d.text);
    const { delivery, verdict, proof } = d.body;
    assert.equal(delivery.contentHash, sha(canonicalize({ title: 'report' })));
    assert.equal(delivery.signature.signer, e.payee.publicKey);
    assert.ok(
      nodeVerifyHex(
        e.payee.publicKey,
        canonicalize({ escrowId: e.id, contentHash: delivery.contentHash, submittedAt: delivery.submittedAt }),
        delivery.signature.signature,
      ),
    );
    assert.equal(verdict.passed, true);
    assert.equal(verdict.results.length, 1);
    assert.equal(verdict.results[0].passed, true);
    assert.equal(proof.outcome, 'released');
    assert.equal(proof.payer, e.payer.publicKey);
    assert.equal(proof.payee, e.payee.publicKey);
    assert.equal(proof.amount, '12.5');
    assert.equal(proof.deliveryHash, delivery.contentHash);
    assert.equal(proof.verdictId, verdict.id);
    assert.equal(proof.termsHash, sha(canonicalize(PASSING_TERMS)));
    const { signature, ...unsigned } = proof;
    const issuer = (await h().req('GET', '/health')).body.issuer;
    assert.equal(signature.signer, issuer);
    assert.ok(nodeVerifyHex(issuer, canonicalize(unsigned), signature.signature), 'node:crypto verifies the proof over RFC 8785 bytes');

    const got = await h().req('GET', `/v1/escrows/${e.id}`);
    assert.equal(got.body.state, 'settled');
    assert.equal(got.body.custody.status, 'settled');
    assert.equal(got.body.deadlineAt, undefined);
    assert.deepEqual((await h().req('GET', `/v1/escrows/${e.id}/proof`)).body, proof);
    assert.deepEqual((await h().req('GET', `/v1/proofs/${proof.id}`)).body, proof);
    const v = await h().req('GET', `/v1/proofs/${proof.id}/verify`);
    assert.deepEqual(v.body, { proofId: proof.id, signatureValid: true, trailIntact: true, trailHeadMatches: true, issuer });
  });

  test('events come out in the order and with the data of docs/protocol.md §3.6, derived from a trail that verifies', async () => {
    const s = await settled(h());
    const ev = (await h().req('GET', `/v1/escrows/${s.id}/events`)).body.events;
    assert.deepEqual(
      ev.map((x: any) => x.event),
      ['escrow.created', 'escrow.funded', 'delivery.submitted', 'verdict.passed', 'proof.issued'],
    );
    assert.equal(ev[0].data.escrow.id, s.id);
    assert.equal(ev[1].data.deadlineAt, s.escrow.deadlineAt);
    assert.deepEqual(ev[2].data, { deliveryId: s.delivery.delivery.id, contentHash: s.delivery.delivery.contentHash });
    assert.deepEqual(ev[3].data, { verdictId: s.delivery.verdict.id, passed: true, failed: [] });
    // A closing that pays the payee opens the refund window (docs/protocol.md §24.4): 30 days by default.
    const refundDeadline = new Date(Date.parse(s.proof.issuedAt) + 2_592_000_000).toISOString();
    assert.deepEqual(ev[4].data, { proofId: s.proof.id, outcome: 'released', refundDeadline });
    const view = (await h().req('GET', `/v1/escrows/${s.id}`)).body;
    assert.equal(view.refundDeadline, refundDeadline);
    assert.equal(view.refundedTotal, '0');
    for (const x of ev) assert.equal(x.escrowId, s.id);

    const trail = (await h().req('GET', `/v1/escrows/${s.id}/trail`)).body;
    assert.equal(trail.intactUpTo, null);
    assert.equal(trail.entries[0].prevHash, '0'.repeat(64));
    for (const [i, t] of trail.entries.entries()) {
      assert.equal(t.index, i);
      assert.equal(t.hash, sha(canonicalize({ index: t.index, prevHash: t.prevHash, at: t.at, event: t.event, body: t.body })));
      if (i > 0) assert.equal(t.prevHash, trail.entries[i - 1].hash);
      assert.equal(ev[i].at, t.at);
    }
    // The proof describes the trail before its own proof.issued entry.
    assert.equal(s.proof.trailLength, 4);
    assert.equal(s.proof.trailHead, trail.entries[3].hash);
  });

  test('a tampered trail reports the first broken index, and proof verification notices', async () => {
    const s = await settled(h());
    await h().db.query(`UPDATE trail_entries SET body = '{"deadlineAt":"2000-01-01T00:00:00.000Z"}' WHERE escrow_id = $1 AND idx = 1`, [
      s.id,
    ]);
    const trail = (await h().req('GET', `/v1/escrows/${s.id}/trail`)).body;
    assert.equal(trail.intactUpTo, 1);
    const v = (await h().req('GET', `/v1/proofs/${s.proof.id}/verify`)).body;
    assert.equal(v.signatureValid, true);
    assert.equal(v.trailIntact, false);
    assert.equal(v.trailHeadMatches, false);
  });

  test('a failing verdict leaves the escrow delivered with a resolve deadline, and a refund closes it', async () => {
    const e = await failedDelivery(h());
    const v = e.delivery.verdict;
    assert.equal(v.results[0].passed, false);
    assert.match(v.results[0].detail, /title/);
    assert.equal(e.delivery.proof, undefined);
    const got = (await h().req('GET', `/v1/escrows/${e.id}`)).body;
    assert.equal(got.state, 'delivered');
    assert.ok(got.deadlineAt);
    const r = await h().req('POST', `/v1/escrows/${e.id}/refund`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.outcome, 'refunded');
    assert.equal(r.body.deliveryHash, e.delivery.delivery.contentHash);
    assert.equal(r.body.verdictId, v.id);
    const ev = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events.map((x: any) => x.event);
    assert.deepEqual(ev, ['escrow.created', 'escrow.funded', 'delivery.submitted', 'verdict.failed', 'escrow.refunded', 'proof.issued']);
    const failed = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events[3].data;
    assert.deepEqual(failed.failed, ['shape']);
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'refunded');
  });

  test('a funded escrow refunds without a delivery: the proof has no deliveryHash or verdictId', async () => {
    const e = await funded(h());
    const r = await h().req('POST', `/v1/escrows/${e.id}/refund`);
    assert.equal(r.status, 200);
    assert.equal(r.body.deliveryHash, undefined);
    assert.equal(r.body.verdictId, undefined);
    const ev = (await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events;
    assert.deepEqual(ev[2].data, { proofId: r.body.id });
  });

  test('a client-signed delivery verifies against the payee key; wrong signer, bad signature and clock skew are 422', async () => {
    const payer = await agent(h());
    const payee = clientKey();
    const c = await h().req('POST', '/v1/escrows', {
      amount: '1',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: payer.id,
      payee: { publicKey: payee.publicKey, label: 'remote' },
    });
    assert.equal(c.status, 201, c.text);
    assert.deepEqual(c.body.payee, { publicKey: payee.publicKey, label: 'remote' });
    await h().req('POST', `/v1/escrows/${c.body.id}/fund`);
    const payload = { title: 'signed' };
    const contentHash = sha(canonicalize(payload));
    const submittedAt = new Date().toISOString();
    const other = clientKey();
    const wrongSigner = await h().req('POST', `/v1/escrows/${c.body.id}/delivery`, {
      payload,
      submittedAt,
      signature: { signer: other.publicKey, signature: other.sign({ escrowId: c.body.id, contentHash, submittedAt }) },
    });
    assert.match(expectError(wrongSigner, 422, 'unprocessable'), /signer/);
    const badSig = await h().req('POST', `/v1/escrows/${c.body.id}/delivery`, {
      payload,
      submittedAt,
      signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: c.body.id, contentHash: '0'.repeat(64), submittedAt }) },
    });
    assert.match(expectError(badSig, 422, 'unprocessable'), /does not verify/);
    const old = new Date(Date.now() - 301_000).toISOString();
    const skew = await h().req('POST', `/v1/escrows/${c.body.id}/delivery`, {
      payload,
      submittedAt: old,
      signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: c.body.id, contentHash, submittedAt: old }) },
    });
    assert.match(expectError(skew, 422, 'unprocessable'), /300 s/);
    const ok = await h().req('POST', `/v1/escrows/${c.body.id}/delivery`, {
      payload,
      submittedAt,
      signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: c.body.id, contentHash, submittedAt }) },
    });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.delivery.submittedAt, submittedAt);
    assert.equal(ok.body.proof.outcome, 'released');
    // A second delivery is 409.
    const again = await h().req('POST', `/v1/escrows/${c.body.id}/delivery`, {
      payload,
      submittedAt,
      signature: { signer: payee.publicKey, signature: payee.sign({ escrowId: c.body.id, contentHash, submittedAt }) },
    });
    expectError(again, 409, 'invalid_state');
  });

  test('the sandbox delivery form refuses an agent that is not the payee (422) and an unknown agent (404)', async () => {
    const e = await funded(h());
    expectError(await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payer.id, payload: {} }), 422, 'unprocessable');
    expectError(
      await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa', payload: {} }),
      404,
      'not_found',
    );
    expectError(await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id }), 400, 'bad_request');
    expectError(await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: '\ud800' }), 400, 'bad_request');
    // Nothing half-written: the escrow is still funded with no delivery.
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}`)).body.state, 'funded');
    assert.equal((await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events.length, 2);
  });

  test('every check kind is verified with one result per check and a useful detail', async () => {
    const payload = { title: 'x', score: 7, tags: ['a', 'b'], nested: { ok: true } };
    const hash = sha(canonicalize(payload));
    const terms = {
      description: 'all kinds',
      checks: [
        { kind: 'hash', expected: hash },
        { kind: 'maxBytes', limit: 10 },
        { kind: 'deadline', by: '2000-01-01T00:00:00Z' },
        { kind: 'shape', requiredFields: ['title', '/nested/ok', '/missing'] },
        { kind: 'predicate', name: 'non-empty' },
        { kind: 'predicate', name: 'equals', params: { pointer: '/title', value: 'x' } },
        { kind: 'predicate', name: 'number-range', params: { pointer: '/score', min: 1, max: 5 } },
        { kind: 'predicate', name: 'length-range', params: { pointer: '/tags', min: 1, max: 3 } },
      ],
    };
    const e = await funded(h(), { terms });
    const d = await h().req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload });
    assert.equal(d.status, 201, d.text);
    const results = d.body.verdict.results;
    assert.deepEqual(
      results.map((r: any) => r.passed),
      [true, false, false, false, true, true, false, true],
    );
    assert.deepEqual(
      results.map((r: any) => r.check.kind),
      terms.checks.map((c) => c.kind),
    );
    for (const r of results) assert.ok(r.detail.length > 5, r.detail);
    assert.match(results[3].detail, /\/missing/);
    assert.deepEqual((await h().req('GET', `/v1/escrows/${e.id}/events`)).body.events[3].data.failed, [
      'maxBytes',
      'deadline',
      'shape',
      'predicate',
    ]);
  });
});

describeStores('escrow creation errors', (h) => {
  const base = async () => {
    const payer = await agent(h());
    const payee = await agent(h());
    return { amount: '5', asset: 'USDC', terms: PASSING_TERMS, payerAgentId: payer.id, payeeAgentId: payee.id } as Record<string, unknown>;
  };
  const rows: Array<[string, (b: Record<string, unknown>) => void, number, string, RegExp]> = [
    ['missing terms', (b) => delete b.terms, 400, 'bad_request', /terms/],
    ['missing amount', (b) => delete b.amount, 400, 'bad_request', /^amount is required/],
    ['a float amount', (b) => (b.amount = 5), 400, 'bad_request', /^amount/],
    ['seven fraction digits', (b) => (b.amount = '1.0000001'), 400, 'bad_request', /^amount/],
    ['a zero amount', (b) => (b.amount = '0.000'), 400, 'bad_request', /^amount/],
    ['a bad asset', (b) => (b.asset = 'US D'), 400, 'bad_request', /^asset/],
    [
      'a malformed party key',
      (b) => {
        delete b.payerAgentId;
        b.payer = { publicKey: 'abc' };
      },
      400,
      'bad_request',
      /^payer\.publicKey/,
    ],
    ['no payer at all', (b) => delete b.payerAgentId, 400, 'bad_request', /^payer is required/],
    ['both payee forms', (b) => (b.payee = { publicKey: 'a'.repeat(64) }), 400, 'bad_request', /either payee or payeeAgentId/],
    ['payer equal to payee', (b) => (b.payeeAgentId = b.payerAgentId), 400, 'bad_request', /different/],
    ['an unknown field', (b) => (b.colour = 'red'), 400, 'bad_request', /^colour is not a known field/],
    [
      'an unknown check kind',
      (b) => (b.terms = { description: 'd', checks: [{ kind: 'vibes' }] }),
      400,
      'bad_request',
      /terms\.checks\[0\]/,
    ],
    [
      'an unknown predicate',
      (b) => (b.terms = { description: 'd', checks: [{ kind: 'predicate', name: 'nope' }] }),
      400,
      'bad_request',
      /terms\.checks\[0\]\.name/,
    ],
    [
      'bad predicate params',
      (b) => (b.terms = { description: 'd', checks: [{ kind: 'predicate', name: 'number-range', params: { pointer: 'x' } }] }),
      400,
      'bad_request',
      /terms\.checks\[0\]\.params/,
    ],
    ['a zero timeout', (b) => (b.timeouts = { deliverWithinSeconds: 0 }), 400, 'bad_request', /^timeouts\.deliverWithinSeconds/],
    ['an unknown timeout ruling', (b) => (b.timeouts = { timeoutRuling: 'coin-flip' }), 400, 'bad_request', /^timeouts\.timeoutRuling/],
    ['an unknown payer agent', (b) => (b.payerAgentId = 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'not_found', /payerAgentId/],
    ['an unknown mandate', (b) => (b.mandateId = 'mnd_01aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'not_found', /mandateId/],
    [
      'an over-long description',
      (b) => (b.terms = { description: 'x'.repeat(10001), checks: [] }),
      400,
      'bad_request',
      /terms\.description/,
    ],
  ];
  for (const [what, mutate, status, code, msg] of rows) {
    test(`creating an escrow with ${what} is ${status} ${code}`, async () => {
      const b = await base();
      mutate(b);
      const before = (await h().req('GET', '/v1/escrows')).body.escrows.length;
      assert.match(expectError(await h().req('POST', '/v1/escrows', b), status, code), msg);
      assert.equal((await h().req('GET', '/v1/escrows')).body.escrows.length, before, 'nothing half-written');
    });
  }

  test('an arbiter can be named by KeyRef or agent id and appears on the escrow', async () => {
    const b = await base();
    const arb = await agent(h(), 'arbiter');
    const r = await h().req('POST', '/v1/escrows', { ...b, arbiterAgentId: arb.id });
    assert.equal(r.status, 201);
    assert.equal(r.body.arbiter.publicKey, arb.publicKey);
    const k = clientKey();
    const r2 = await h().req('POST', '/v1/escrows', { ...b, arbiter: { publicKey: k.publicKey } });
    assert.deepEqual(r2.body.arbiter, { publicKey: k.publicKey });
  });

  test('unknown escrow ids are 404 on every escrow route', async () => {
    const id = 'esc_01aaaaaaaaaaaaaaaaaaaaaaaa';
    for (const [m, p] of [
      ['GET', ''],
      ['POST', '/fund'],
      ['POST', '/refund'],
      ['GET', '/trail'],
      ['GET', '/events'],
      ['GET', '/proof'],
    ] as const) {
      expectError(await h().req(m, `/v1/escrows/${id}${p}`), 404, 'not_found');
    }
    expectError(
      await h().req('POST', `/v1/escrows/${id}/delivery`, { agentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaab', payload: 1 }),
      404,
      'not_found',
    );
    expectError(await h().req('GET', '/v1/proofs/prf_01aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'not_found');
    expectError(await h().req('GET', '/v1/proofs/prf_01aaaaaaaaaaaaaaaaaaaaaaaa/verify'), 404, 'not_found');
  });

  test('the proof of an open escrow is 404 until it closes', async () => {
    const e = await funded(h());
    assert.match(expectError(await h().req('GET', `/v1/escrows/${e.id}/proof`), 404, 'not_found'), /not closed/);
  });

  test('listing pages through escrows with limit, state and cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await escrow(h())).id);
    const all = (await h().req('GET', '/v1/escrows')).body;
    assert.equal(all.nextCursor, null);
    const order = all.escrows.map((e: any) => e.id).filter((id: string) => ids.includes(id));
    assert.deepEqual(order, ids);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = (await h().req('GET', `/v1/escrows?state=created&limit=2${cursor ? `&cursor=${cursor}` : ''}`)).body;
      assert.ok(page.escrows.length <= 2);
      for (const e of page.escrows) assert.equal(e.state, 'created');
      seen.push(...page.escrows.map((e: any) => e.id));
      cursor = page.nextCursor;
    } while (cursor);
    for (const id of ids) assert.ok(seen.includes(id));
    expectError(await h().req('GET', '/v1/escrows?limit=0'), 400, 'bad_request');
    expectError(await h().req('GET', '/v1/escrows?state=open'), 400, 'bad_request');
    expectError(await h().req('GET', '/v1/escrows?cursor=zzz'), 400, 'bad_request');
    expectError(await h().req('GET', '/v1/escrows?sort=asc'), 400, 'bad_request');
  });
});

describeStores('listing every escrow', (h) => {
  test('without limit the list streams across batches: every escrow once, in creation order, valid JSON', async () => {
    const { id } = await escrow(h());
    // 1,234 more rows cloned in SQL from that escrow (the list reads rows, not the trail).
    await h().db.query(
      `INSERT INTO escrows (id, state, payer, payee, arbiter, payer_key, payee_key, arbiter_key, amount, asset, terms, terms_hash,
         timeouts, deadline_at, mandate_id, mandate_hash, custody_status, verdict, trail_length, trail_head, created_at, updated_at)
       SELECT 'esc_bulk' || lpad(g::text, 6, '0'), state, payer, payee, arbiter, payer_key, payee_key, arbiter_key, amount, asset, terms,
         terms_hash, timeouts, deadline_at, mandate_id, mandate_hash, custody_status, verdict, trail_length, trail_head, created_at, updated_at
       FROM escrows, generate_series(1, 1234) g WHERE id = $1`,
      [id],
    );
    const res = await h().app.fetch(new Request('http://t/v1/escrows'));
    assert.equal(res.status, 200);
    const body = JSON.parse(await res.text());
    const [{ n }] = await h().db.query('SELECT count(*)::int AS n FROM escrows');
    assert.equal(body.escrows.length, n);
    assert.equal(body.nextCursor, null);
    const bulk = body.escrows.map((e: any) => e.id).filter((x: string) => x.startsWith('esc_bulk'));
    assert.equal(bulk.length, 1234);
    assert.deepEqual(bulk, [...bulk].sort());
    assert.equal(new Set(body.escrows.map((e: any) => e.id)).size, n);
    const filtered = JSON.parse(await (await h().app.fetch(new Request('http://t/v1/escrows?state=settled'))).text());
    for (const e of filtered.escrows) assert.equal(e.state, 'settled');
    expectError(await h().req('GET', '/v1/escrows?cursor=bad'), 400, 'bad_request');
  });
});
