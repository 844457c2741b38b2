// Hostile facilitator bodies: each gets an x402 refusal (status 200, isValid:false / success:false)
// or the service's 400/413 envelope, never a 500, and writes nothing. Also the facilitator's
// idempotency and the bearer key in hosted mode, through the front door (app.fetch).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores, expectError, makeHarness, type Harness } from '../harness.ts';
import { generateKeys, signMandate, type Terms } from '@escrow-settlement/client';
import { signCapture, signCollect, signVoid } from '@escrow-settlement/client/x402/authCapture';
import { createEscrow } from '../../src/escrow/escrows.ts';
import { checkRequest } from '../../src/x402/facilitator/requirements.ts';
import { collectHash } from '../../src/x402/facilitator/collect.ts';

const TERMS: Terms = { description: 'a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const RESOURCE = 'https://shop.example/report';
const V = '/v1/x402/facilitator/verify';
const S = '/v1/x402/facilitator/settle';

function requirements(payTo: string, over: Record<string, unknown> = {}) {
  return {
    scheme: 'auth-capture',
    network: 'escrow:sandbox',
    asset: 'USDC',
    amount: '10000',
    payTo,
    maxTimeoutSeconds: 60,
    extra: { paymentFlow: 'escrow', terms: TERMS },
    ...over,
  };
}

/** A valid collect request; `tweak` edits the authorization before it is signed. */
function collect(
  payerSk: string,
  payTo: string,
  o: { req?: Record<string, unknown>; nonce?: string; validBefore?: string; value?: string; resource?: string } = {},
) {
  const req = requirements(payTo, o.req);
  const payload = signCollect(payerSk, {
    to: payTo,
    value: o.value ?? (req.amount as string),
    asset: 'USDC',
    resource: o.resource ?? RESOURCE,
    terms: (req.extra as any).terms ?? TERMS,
    maxTimeoutSeconds: 60,
    nonce: o.nonce,
    validBefore: o.validBefore,
  });
  return {
    x402Version: 2,
    paymentPayload: { x402Version: 2, resource: { url: RESOURCE }, accepted: req, payload },
    paymentRequirements: req,
  };
}

async function counts(h: Harness) {
  const [r] =
    await h.db.query(`SELECT (SELECT count(*) FROM escrows)::int AS escrows, (SELECT count(*) FROM x402_payments)::int AS payments,
    (SELECT count(*) FROM proofs)::int AS proofs, (SELECT count(*) FROM deliveries)::int AS deliveries, (SELECT count(*) FROM trail_entries)::int AS trail`);
  return r;
}

const refusal = (res: { status: number; body: any; text: string }, field: 'invalidReason' | 'errorReason', code: string) => {
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body[field === 'invalidReason' ? 'isValid' : 'success'], false, res.text);
  assert.equal(res.body[field], code, res.text);
};

describeStores('x402 facilitator: refusals, idempotency, no writes', (h) => {
  const payer = generateKeys();
  const payee = generateKeys();

  test('supported names auth-capture on escrow:sandbox with the escrow flow and the issuer as signer', async () => {
    const r = await h().req('GET', '/v1/x402/facilitator/supported');
    assert.equal(r.status, 200);
    const issuer = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys[0].publicKey;
    assert.deepEqual(r.body, {
      kinds: [
        {
          x402Version: 2,
          scheme: 'auth-capture',
          network: 'escrow:sandbox',
          extra: { paymentFlow: 'escrow', decimals: 6, assets: ['USDC'] },
        },
      ],
      extensions: [],
      signers: { 'escrow:*': [issuer] },
    });
  });

  test('verify accepts a good collect and writes nothing', async () => {
    const before = await counts(h());
    const r = await h().req('POST', V, collect(payer.secretKey, payee.publicKey));
    assert.deepEqual(r.body, { isValid: true, payer: payer.publicKey });
    assert.deepEqual(await counts(h()), before);
  });

  test('hostile bodies are refused as x402 answers or the 400/413 envelope, and write nothing', async () => {
    const before = await counts(h());
    const good = () => collect(payer.secretKey, payee.publicKey);
    const cases: Array<[string, unknown, string]> = [
      ['wrong x402Version', { ...good(), x402Version: 1 }, 'version_mismatch'],
      [
        'wrong payload version',
        (() => {
          const b = good();
          (b.paymentPayload as any).x402Version = 1;
          return b;
        })(),
        'version_mismatch',
      ],
      [
        'another network',
        (() => {
          const b = collect(payer.secretKey, payee.publicKey, { req: { network: 'eip155:8453' } });
          return b;
        })(),
        'scheme_mismatch',
      ],
      ['another scheme', collect(payer.secretKey, payee.publicKey, { req: { scheme: 'exact' } }), 'scheme_mismatch'],
      [
        'another flow',
        collect(payer.secretKey, payee.publicKey, { req: { extra: { paymentFlow: 'authorization', terms: TERMS } } }),
        'scheme_mismatch',
      ],
      ['another asset', collect(payer.secretKey, payee.publicKey, { req: { asset: 'DOGE' } }), 'wrong_asset'],
      [
        'missing authorization field',
        (() => {
          const b = good();
          delete (b.paymentPayload.payload.authorization as any).nonce;
          return b;
        })(),
        'malformed_header',
      ],
      ['missing terms', collect(payer.secretKey, payee.publicKey, { req: { extra: { paymentFlow: 'escrow' } } }), 'malformed_header'],
      [
        'bad signature',
        (() => {
          const b = good();
          b.paymentPayload.payload.signature = 'ab'.repeat(64);
          return b;
        })(),
        'bad_signature',
      ],
      [
        'tampered value after signing',
        (() => {
          const b = good();
          b.paymentPayload.payload.authorization.value = '1';
          return b;
        })(),
        'payment_invalid',
      ],
      [
        'signed for another resource',
        collect(payer.secretKey, payee.publicKey, { resource: 'https://elsewhere.example/' }),
        'wrong_resource',
      ],
      [
        'terms hash of other terms',
        (() => {
          const b = good();
          const other = signCollect(payer.secretKey, {
            to: payee.publicKey,
            value: '10000',
            asset: 'USDC',
            resource: RESOURCE,
            terms: { description: 'x', checks: [] },
            maxTimeoutSeconds: 60,
          });
          b.paymentPayload.payload = other;
          return b;
        })(),
        'terms_mismatch',
      ],
      [
        'accepted differs from requirements',
        (() => {
          const b = good();
          b.paymentPayload.accepted = { ...b.paymentPayload.accepted, maxTimeoutSeconds: 61 };
          return b;
        })(),
        'payment_invalid',
      ],
      [
        'validBefore beyond maxTimeoutSeconds',
        collect(payer.secretKey, payee.publicKey, { validBefore: new Date(Date.now() + 3_600_000).toISOString() }),
        'payment_invalid',
      ],
      [
        'validBefore passed',
        collect(payer.secretKey, payee.publicKey, { validBefore: new Date(Date.now() - 1000).toISOString() }),
        'payment_invalid',
      ],
      ['payer pays itself', collect(payer.secretKey, payer.publicKey), 'payment_invalid'],
      [
        'a capture at verify',
        {
          ...good(),
          paymentPayload: { ...good().paymentPayload, payload: signCapture(payee.secretKey, { escrowId: 'esc_x', payload: {} }) },
        },
        'malformed_header',
      ],
      [
        'unknown payload type',
        { ...good(), paymentPayload: { ...good().paymentPayload, payload: { type: 'refund' } } },
        'malformed_header',
      ],
    ];
    for (const [name, body, code] of cases) {
      for (const [path, field] of [
        [V, 'invalidReason'],
        [S, 'errorReason'],
      ] as const) {
        const r = await h().req('POST', path, body);
        assert.ok(r.status !== 500, `${name} at ${path}: ${r.text}`);
        try {
          refusal(r, field, code);
        } catch (err) {
          if (name === 'a capture at verify' && path === S) continue; // settle reads it as a capture
          throw new Error(`${name} at ${path}: ${(err as Error).message}`);
        }
      }
    }
    // Not facilitator requests at all: the 400 envelope naming the field; too big: 413.
    expectError(await h().req('POST', S, '{"x402Version": 2}'), 400, 'bad_request');
    expectError(await h().req('POST', S, { ...good(), extraField: 1 }), 400, 'bad_request');
    expectError(await h().req('POST', V, { x402Version: 'two', paymentPayload: {}, paymentRequirements: {} }), 400, 'bad_request');
    expectError(await h().req('POST', S, 'not json'), 400, 'bad_request');
    const huge = collect(payer.secretKey, payee.publicKey);
    (huge.paymentPayload as any).padding = 'x'.repeat(1_100_000);
    expectError(await h().req('POST', S, huge), 413, 'payload_too_large');
    assert.deepEqual(await counts(h()), before, 'no refused body wrote anything');
  });

  test('collect is idempotent per (payTo, nonce); a used nonce with another payload is refused', async () => {
    const nonce = 'c1'.repeat(32);
    const body = collect(payer.secretKey, payee.publicKey, { nonce });
    const before = await counts(h());
    const first = await h().req('POST', S, body);
    assert.equal(first.body.success, true, first.text);
    assert.match(first.body.transaction, /^esc_/);
    assert.deepEqual(first.body, {
      success: true,
      transaction: first.body.transaction,
      network: 'escrow:sandbox',
      payer: payer.publicKey,
      amount: '10000',
      extra: { escrowId: first.body.transaction },
    });
    const again = await h().req('POST', S, body);
    assert.deepEqual(again.body, first.body);
    const escrow = (await h().req('GET', `/v1/escrows/${first.body.transaction}`)).body;
    assert.equal(escrow.state, 'funded');
    assert.equal(escrow.amount, '0.01');
    const mid = await counts(h());
    assert.equal(mid.escrows, before.escrows + 1);
    assert.equal(mid.payments, before.payments + 1);
    refusal(await h().req('POST', V, body), 'invalidReason', 'payment_invalid');
    const other = collect(payer.secretKey, payee.publicKey, { nonce, req: { amount: '20000' } });
    refusal(await h().req('POST', S, other), 'errorReason', 'payment_invalid');
    assert.deepEqual(await counts(h()), mid);
  });

  test('concurrent identical collects make one escrow; a collect that died between create and fund is funded by its retry', async () => {
    const body = collect(payer.secretKey, payee.publicKey);
    const before = await counts(h());
    const answers = await Promise.all(Array.from({ length: 6 }, () => h().req('POST', S, body)));
    for (const a of answers) assert.deepEqual(a.body, answers[0].body, a.text);
    assert.equal(answers[0].body.success, true);
    const mid = await counts(h());
    assert.equal(mid.escrows, before.escrows + 1);
    assert.equal(mid.payments, before.payments + 1);

    // The first collect's escrow and payment record committed, then the process died before fund.
    const late = collect(payer.secretKey, payee.publicKey);
    const checked = checkRequest(late as any, 'escrow:sandbox');
    const a = (late.paymentPayload.payload as any).authorization;
    await createEscrow(h().app.svc, {
      amount: checked.amount,
      asset: 'USDC',
      terms: checked.terms,
      payer: { keyRef: { publicKey: a.from } },
      payee: { keyRef: { publicKey: payee.publicKey } },
      timeouts: checked.timeouts,
      alsoWrite: (escrowId, now) => [
        {
          text: 'INSERT INTO x402_payments (pay_to, nonce, payload_hash, escrow_id, payer, network, amount, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
          params: [
            payee.publicKey,
            a.nonce,
            collectHash(checked, late.paymentPayload.payload as any),
            escrowId,
            a.from,
            'escrow:sandbox',
            '10000',
            now,
          ],
        },
      ],
    });
    const [orphan] = await h().db.query('SELECT escrow_id FROM x402_payments WHERE nonce = $1', [a.nonce]);
    assert.equal((await h().req('GET', `/v1/escrows/${orphan.escrow_id}`)).body.state, 'created');
    const retried = await h().req('POST', S, late);
    assert.equal(retried.body.transaction, orphan.escrow_id, retried.text);
    assert.equal((await h().req('GET', `/v1/escrows/${orphan.escrow_id}`)).body.state, 'funded');
    assert.equal((await counts(h())).escrows, mid.escrows + 1);
  });

  test("capture and void: someone else's escrow, bad signatures, replays answer as the first", async () => {
    const body = collect(payer.secretKey, payee.publicKey);
    const collected = (await h().req('POST', S, body)).body;
    const escrowId = collected.transaction as string;
    const req = body.paymentRequirements;
    const settle = (payload: unknown, r: Record<string, unknown> = req) =>
      h().req('POST', S, { x402Version: 2, paymentPayload: { ...body.paymentPayload, accepted: r, payload }, paymentRequirements: r });
    const before = await counts(h());
    // A REST escrow is not an x402 payment; another payee's requirements do not reach this one.
    const stranger = generateKeys();
    refusal(
      await settle(signCapture(stranger.secretKey, { escrowId, payload: { title: 't' } }), requirements(stranger.publicKey)),
      'errorReason',
      'wrong_payee',
    );
    refusal(
      await settle(signCapture(payee.secretKey, { escrowId: 'esc_01jzzzzzzzzzzzzzzzzzzzzzzz', payload: { title: 't' } })),
      'errorReason',
      'payment_invalid',
    );
    refusal(await settle(signCapture(stranger.secretKey, { escrowId, payload: { title: 't' } })), 'errorReason', 'wrong_payee');
    const forged = signCapture(payee.secretKey, { escrowId, payload: { title: 't' } });
    forged.delivery.payload = { title: 'other' };
    refusal(await settle(forged), 'errorReason', 'bad_signature');
    refusal(await settle(signVoid(stranger.secretKey, { escrowId })), 'errorReason', 'wrong_payee');
    refusal(
      await settle(signVoid(payee.secretKey, { escrowId, signedAt: new Date(Date.now() - 3_600_000).toISOString() })),
      'errorReason',
      'payment_invalid',
    );
    assert.deepEqual(await counts(h()), before);

    const consent = signCapture(payee.secretKey, { escrowId, payload: { title: 'ok' } });
    const captured = await settle(consent);
    assert.equal(captured.body.success, true, captured.text);
    assert.match(captured.body.transaction, /^prf_/);
    assert.deepEqual(captured.body.extra, { escrowId, state: 'settled' });
    const replay = await settle(consent);
    assert.deepEqual(replay.body, captured.body, 'a repeated capture answers what the first did');
    // A capture consent is single use: another one (signed later) is not answered as if it had captured.
    const later = signCapture(payee.secretKey, {
      escrowId,
      payload: { title: 'ok' },
      submittedAt: new Date(Date.now() + 1000).toISOString(),
    });
    const again = await settle(later);
    refusal(again, 'errorReason', 'payment_invalid');
    assert.match(again.body.errorMessage, /already captured with another capture consent/);
    // The same commands as the REST API: the same trail and events, and a proof that verifies.
    const events = (await h().req('GET', `/v1/escrows/${escrowId}/events`)).body.events.map((e: any) => e.type ?? e.event);
    assert.deepEqual(events, ['escrow.created', 'escrow.funded', 'delivery.submitted', 'verdict.passed', 'proof.issued']);
    const checked = (await h().req('GET', `/v1/proofs/${captured.body.transaction}/verify`)).body;
    assert.deepEqual([checked.signatureValid, checked.trailIntact, checked.trailHeadMatches], [true, true, true]);
    refusal(await settle(signVoid(payee.secretKey, { escrowId })), 'errorReason', 'payment_invalid');

    // A void on a funded escrow refunds it; a repeated void answers the same proof.
    const second = collect(payer.secretKey, payee.publicKey);
    const id2 = (await h().req('POST', S, second)).body.transaction;
    const voidConsent = signVoid(payee.secretKey, { escrowId: id2 });
    const voidWith = (payload: unknown) =>
      h().req('POST', S, {
        x402Version: 2,
        paymentPayload: { ...second.paymentPayload, payload },
        paymentRequirements: second.paymentRequirements,
      });
    const voided = await voidWith(voidConsent);
    assert.equal(voided.body.success, true, voided.text);
    assert.deepEqual(voided.body.extra, { escrowId: id2, state: 'refunded' });
    assert.deepEqual((await voidWith(voidConsent)).body, voided.body);
    // Another void consent for the voided payment is refused: a void is single use too.
    const other = await voidWith(signVoid(payee.secretKey, { escrowId: id2, signedAt: new Date(Date.now() + 1000).toISOString() }));
    refusal(other, 'errorReason', 'payment_invalid');
    assert.match(other.body.errorMessage, /another void consent/);
    assert.equal((await h().req('GET', `/v1/proofs/${voided.body.transaction}`)).body.outcome, 'refunded');
  });

  test('a payer under a mandate: within the caps it pays (and the mandate records it), beyond them it is refused', async () => {
    const principal = generateKeys();
    const agent = generateKeys();
    const caps = {
      agent: agent.publicKey,
      perEscrowMax: '0.015',
      cumulativeMax: '0.02',
      allowedAssets: ['USDC'],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const mandate = (await h().req('POST', '/v1/mandates', signMandate(principal.secretKey, caps))).body;
    const over = collect(agent.secretKey, payee.publicKey, { req: { amount: '20000' } });
    refusal(await h().req('POST', V, over), 'invalidReason', 'payment_invalid');
    const ok = await h().req('POST', S, collect(agent.secretKey, payee.publicKey));
    assert.equal(ok.body.success, true, ok.text);
    assert.equal((await h().req('GET', `/v1/escrows/${ok.body.transaction}`)).body.mandateId, mandate.id);
    const before = await counts(h());
    const r = await h().req('POST', S, collect(agent.secretKey, payee.publicKey, { req: { amount: '15000' } }));
    refusal(r, 'errorReason', 'payment_invalid');
    assert.match(r.body.errorMessage, /cumulativeMax/);
    assert.deepEqual(await counts(h()), before);
  });
});

test('hosted: the facilitator needs a bearer key, and a key sees only its own payments', async () => {
  const h = await makeHarness('pglite', { API_KEY: 'facilitator-root-key-0123456' });
  try {
    const root = { authorization: 'Bearer facilitator-root-key-0123456' };
    expectError(await h.req('GET', '/v1/x402/facilitator/supported'), 401, 'unauthorized');
    const mint = async () => `Bearer ${(await h.req('POST', '/v1/admin/keys', {}, root)).body.secret}`;
    const [a, b] = [await mint(), await mint()];
    const payer = generateKeys();
    const payee = generateKeys();
    const body = collect(payer.secretKey, payee.publicKey);
    const collected = await h.req('POST', S, body, { authorization: a });
    assert.equal(collected.body.success, true, collected.text);
    const escrowId = collected.body.transaction;
    assert.equal((await h.req('GET', `/v1/escrows/${escrowId}`, undefined, { authorization: a })).status, 200);
    assert.equal((await h.req('GET', `/v1/escrows/${escrowId}`, undefined, { authorization: b })).status, 404);
    const capture = {
      x402Version: 2,
      paymentPayload: { ...body.paymentPayload, payload: signCapture(payee.secretKey, { escrowId, payload: { title: 'x' } }) },
      paymentRequirements: body.paymentRequirements,
    };
    refusal(await h.req('POST', S, capture, { authorization: b }), 'errorReason', 'payment_invalid');
    const replayed = await h.req('POST', S, body, { authorization: b });
    refusal(replayed, 'errorReason', 'payment_invalid');
    assert.ok(!replayed.text.includes(escrowId), "another key's replay does not learn the escrow");
    assert.equal((await h.req('POST', S, capture, { authorization: a })).body.success, true);
  } finally {
    await h.close();
  }
});

test("hosted: a key's collect never binds to, draws down or names another key's mandate", async () => {
  const h = await makeHarness('pglite', { API_KEY: 'facilitator-root-key-0123456' });
  try {
    const root = { authorization: 'Bearer facilitator-root-key-0123456' };
    const mint = async () => ({ authorization: `Bearer ${(await h.req('POST', '/v1/admin/keys', {}, root)).body.secret}` });
    const [a, b] = [await mint(), await mint()];
    const payer = generateKeys();
    const payee = generateKeys();
    const caps = (perEscrowMax: string, cumulativeMax: string) => ({
      agent: payer.publicKey,
      perEscrowMax,
      cumulativeMax,
      allowedAssets: ['USDC'],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    // Key A registers a tight mandate for the payer: 0.005 per escrow, so a 0.01 payment breaks it.
    const mandateA = (await h.req('POST', '/v1/mandates', signMandate(generateKeys().secretKey, caps('0.005', '0.005')), a)).body;
    assert.ok(mandateA.id, JSON.stringify(mandateA));
    const spentOfA = async () => (await h.req('GET', `/v1/mandates/${mandateA.id}`, undefined, a)).body.usage.spent;
    // A's own collect is held to A's mandate.
    refusal(await h.req('POST', V, collect(payer.secretKey, payee.publicKey), a), 'invalidReason', 'payment_invalid');
    // B cannot see A's mandate: its verify and settle pass without it, bind to nothing and draw nothing down.
    const verified = await h.req('POST', V, collect(payer.secretKey, payee.publicKey), b);
    assert.equal(verified.body.isValid, true, verified.text);
    const settled = await h.req('POST', S, collect(payer.secretKey, payee.publicKey), b);
    assert.equal(settled.body.success, true, settled.text);
    const escrow = (await h.req('GET', `/v1/escrows/${settled.body.transaction}`, undefined, b)).body;
    assert.equal(escrow.mandateId, undefined, 'the escrow names no mandate of another key');
    assert.equal(await spentOfA(), '0');
    // B's own mandate applies to B; its refusal names B's caps only, never A's mandate.
    const mandateB = (await h.req('POST', '/v1/mandates', signMandate(generateKeys().secretKey, caps('0.02', '0.017')), b)).body;
    const underB = await h.req('POST', S, collect(payer.secretKey, payee.publicKey), b);
    assert.equal(underB.body.success, true, underB.text);
    assert.equal((await h.req('GET', `/v1/escrows/${underB.body.transaction}`, undefined, b)).body.mandateId, mandateB.id);
    const refused = await h.req('POST', S, collect(payer.secretKey, payee.publicKey), b);
    refusal(refused, 'errorReason', 'payment_invalid');
    assert.match(refused.body.errorMessage, /cumulativeMax 0\.017/);
    assert.ok(!refused.text.includes(mandateA.id) && !refused.text.includes('0.005'), refused.text);
    assert.equal(await spentOfA(), '0');
    // REST: naming A's mandate is 404 to B, as if it did not exist.
    const rest = await h.req(
      'POST',
      '/v1/escrows',
      {
        amount: '0.001',
        asset: 'USDC',
        terms: TERMS,
        payer: { publicKey: payer.publicKey },
        payee: { publicKey: payee.publicKey },
        mandateId: mandateA.id,
      },
      b,
    );
    expectError(rest, 404, 'not_found');
    assert.equal(await spentOfA(), '0');
  } finally {
    await h.close();
  }
});

test('createEscrow with a confined scope refuses a mandate that scope did not register, writing nothing', async () => {
  const h = await makeHarness('pglite', { API_KEY: 'facilitator-root-key-0123456' });
  try {
    const payer = generateKeys();
    const caps = {
      agent: payer.publicKey,
      perEscrowMax: '1',
      cumulativeMax: '1',
      allowedAssets: ['USDC'],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const root = { authorization: 'Bearer facilitator-root-key-0123456' };
    const m = (await h.req('POST', '/v1/mandates', signMandate(generateKeys().secretKey, caps), root)).body;
    assert.ok(m.id, JSON.stringify(m));
    const before = await counts(h);
    const input = {
      amount: 1000n,
      asset: 'USDC',
      terms: TERMS,
      payer: { keyRef: { publicKey: payer.publicKey } },
      payee: { keyRef: { publicKey: generateKeys().publicKey } },
      mandateId: m.id,
      timeouts: { deliverWithinSeconds: 60, resolveWithinSeconds: 60, decideWithinSeconds: 60, timeoutRuling: 'refund' as const },
    };
    await assert.rejects(createEscrow(h.app.svc, { ...input, scope: 'key_other' }), /mandateId: no mandate/);
    assert.deepEqual(await counts(h), before);
    await createEscrow(h.app.svc, { ...input, scope: null });
    assert.equal((await h.req('GET', `/v1/mandates/${m.id}`, undefined, root)).body.usage.spent, '0.001');
  } finally {
    await h.close();
  }
});
