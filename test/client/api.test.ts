import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeHarness } from '../harness.ts';
import { parseConfig } from '../../src/config.ts';
import { generateKeyFiles, nodeKeySources } from '../../src/node/serviceKeys.ts';
import { nodeVerifyHex } from '../fixtures.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import {
  API_ROUTES,
  ApiError,
  contentHash,
  createClient,
  generateKeys,
  signBody,
  signDelivery,
  signDisputeAction,
  signMandate,
  signRuling,
  verifyBundle,
  verifyConsistency,
  verifyInclusion,
  verifyProof,
  type ApiClient,
  type Terms,
} from '@escrow-settlement/client';

const h = await makeHarness('pglite', { PUBLIC_URL: 'http://sandbox.local' });
// Hosted: the rotation takes a key source, which the Node edge's loader reads (src/node/serviceKeys.ts).
const keyDir = mkdtempSync(join(tmpdir(), 'client-keys-'));
const newKeys = generateKeyFiles(keyDir, parseConfig({}).logOrigin);
const hosted = await makeHarness('pglite', { API_KEY: 'client-test-root-key-0123' }, undefined, {
  keySources: nodeKeySources({ logOrigin: parseConfig({}).logOrigin }),
});
after(async () => {
  await h.close();
  await hosted.close();
  rmSync(keyDir, { recursive: true, force: true });
});

/** The client over the in-process app: no server, no sockets. Records each answer's x-request-id. */
const seen: string[] = [];
const inProcess =
  (app = h.app) =>
  async (req: Request) => {
    const res = await app.fetch(req);
    seen.push(res.headers.get('x-request-id') ?? '');
    return res;
  };
const api: ApiClient = createClient({ baseUrl: 'http://sandbox.local', fetch: inProcess() });

const TITLE_TERMS: Terms = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };

async function rejects(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${err}`);
    return err;
  }
  throw new Error('expected the call to fail');
}

const methodAt = (client: unknown, name: string) => name.split('.').reduce<any>((o, k) => o?.[k], client);

describe('the API client', () => {
  test('has a method for every route the service serves, and every method names a served route', () => {
    // POST /mcp's client is an MCP client (the SDK's, or the package's stdio server in client/src/mcp/).
    const served = new Set(h.app.routes.filter((r) => !r.page && r.path !== '/mcp').map((r) => `${r.method} ${r.path}`));
    const covered = new Set<string>(Object.values(API_ROUTES).flat());
    assert.deepEqual(
      [...served].filter((r) => !covered.has(r)),
      [],
      'routes without a client method',
    );
    assert.deepEqual(
      [...covered].filter((r) => !served.has(r)),
      [],
      'client methods for routes that do not exist',
    );
    for (const name of Object.keys(API_ROUTES)) assert.equal(typeof methodAt(api, name), 'function', `client.${name}`);
  });

  test('partial capture, a refund after release and a refund request, signed client-side; the bundle verifies with net payouts', async () => {
    const payer = generateKeys();
    const payee = generateKeys();
    const created = await api.escrows.create({
      amount: '8',
      asset: 'USDC',
      terms: TITLE_TERMS,
      payer: { publicKey: payer.publicKey },
      payee: { publicKey: payee.publicKey },
      fee: { bps: 100, recipient: 'ab'.repeat(32) },
    });
    await api.escrows.fund(created.id);
    const delivered = await api.escrows.deliver(
      created.id,
      await api.sign.delivery(payee.secretKey, { escrowId: created.id, payload: { title: 't' }, amount: '6.00' }),
    );
    assert.deepEqual(delivered.proof!.payouts, { payee: '5.94', payer: '2', fee: '0.06' });
    const asked = await api.refundRequests.create(
      created.id,
      await api.sign.refundRequest(payer.secretKey, { escrowId: created.id, amount: '1', reason: 'scratched' }),
    );
    assert.equal(asked.refundRequest.by, payer.publicKey);
    const { refund, proof } = await api.refunds.create(
      created.id,
      await api.sign.refund(payee.secretKey, { escrowId: created.id, amount: '1', reason: 'scratched' }),
    );
    assert.deepEqual(
      [refund.amount, refund.reason, proof.outcome, proof.adjusts],
      ['1', 'scratched', 'refunded-after-release', delivered.proof!.id],
    );
    const escrow = await api.escrows.get(created.id);
    assert.equal(escrow.refundedTotal, '1');
    const bundle = await api.proofs.bundle(proof.id);
    const v = verifyBundle(bundle, { trustedKeys: (await api.issuerKeys()).keys });
    assert.equal(v.ok, true, JSON.stringify(v.checks.filter((c) => !c.ok)));
    assert.deepEqual(v.payouts, { payee: '4.94', payer: '3', fee: '0.06' });
    const err = await rejects(
      api.refunds.create(created.id, await api.sign.refund(payee.secretKey, { escrowId: created.id, amount: '5' })),
    );
    assert.equal(err.code, 'invalid_state');
  });

  test('runs a whole lifecycle: mandate, escrow, idempotent fund, signed delivery, proof verified offline and by the log', async () => {
    const principal = generateKeys();
    const payer = generateKeys();
    const payee = generateKeys();
    const caps = {
      agent: payer.publicKey,
      perEscrowMax: '50',
      cumulativeMax: '100',
      allowedAssets: ['USDC'],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const mandate = await api.mandates.create(signMandate(principal.secretKey, caps));
    assert.equal(mandate.principal, principal.publicKey);
    assert.match(mandate.hash, /^[0-9a-f]{64}$/);

    const order = {
      amount: '25',
      asset: 'USDC',
      terms: TITLE_TERMS,
      payer: { publicKey: payer.publicKey },
      payee: { publicKey: payee.publicKey, label: 'seller' },
      mandateId: mandate.id,
    };
    const created = await api.escrows.create(order, { idempotencyKey: 'create-1' });
    assert.equal(created.state, 'created');
    // The same body again, sent anew: the service answers from the stored first answer.
    const replayed = await api.escrows.create({ ...order }, { idempotencyKey: 'create-1' });
    assert.deepEqual(replayed, created, 'the same Idempotency-Key replays the first answer');
    const funded = await api.escrows.fund(created.id, { idempotencyKey: 'fund-1' });
    assert.equal(funded.state, 'funded');
    assert.deepEqual(await api.escrows.fund(created.id, { idempotencyKey: 'fund-1' }), funded);
    assert.equal((await api.mandates.get(mandate.id)).usage?.spent, '25');

    const result = await api.escrows.deliver(created.id, signDelivery(payee.secretKey, { escrowId: created.id, payload: { title: 'Q3' } }));
    assert.equal(result.verdict.passed, true);
    const proof = result.proof!;
    assert.equal(proof.outcome, 'released');
    assert.equal(proof.deliveryHash, contentHash({ title: 'Q3' }));
    assert.deepEqual(await api.escrows.proof(created.id), proof);
    assert.deepEqual(await api.proofs.get(proof.id), proof);
    assert.equal((await api.escrows.get(created.id)).state, 'settled');
    assert.ok((await api.escrows.list()).escrows.some((e) => e.id === created.id));
    assert.ok((await api.escrows.list({ state: 'settled', limit: 1000 })).escrows.every((e) => e.state === 'settled'));
    assert.equal((await api.escrows.trail(created.id)).intactUpTo, null);
    assert.deepEqual((await api.escrows.events(created.id)).events.map((e) => e.event).at(-1), 'proof.issued');
    assert.equal((await api.escrows.custody(created.id)).status, 'confirmed');

    const { keys } = await api.issuerKeys();
    const bundle = await api.proofs.bundle(proof.id);
    assert.equal(verifyBundle(bundle, { trustedKeys: keys }).ok, true);
    assert.equal(verifyProof(proof, { trustedKeys: keys }).ok, true);
    assert.deepEqual(await api.proofs.verify(proof.id), {
      proofId: proof.id,
      signatureValid: true,
      trailIntact: true,
      trailHeadMatches: true,
      issuer: keys.at(-1)!.publicKey,
    });
    assert.equal((await api.verify(proof)).valid, true);
    const inclusion = await api.log.inclusion(proof.id);
    assert.equal(verifyInclusion(proof, inclusion).ok, true);
    const head = await api.log.head();
    assert.equal(head.logSize, inclusion.logSize);
    assert.equal(verifyConsistency(await api.log.consistency(1)).ok, true);
    assert.equal(verifyConsistency(await api.log.consistency(1, head.logSize)).ok, true);
    assert.ok((await api.log.entries({ start: 0 })).entries.some((e) => e.proof.id === proof.id));
    assert.match(await api.log.checkpoint(), /^escrow-settlement\.local\/log\n\d+\n/);

    assert.equal((await api.health()).ok, true);
    assert.equal((await api.openapi()).openapi, '3.1.0');
    assert.match(await api.errorsPage(), /<tr id="payment_required">/);
  });

  test('runs a dispute with client-side signatures: opened by the payer, evidence from the payee, a co-signed split', async () => {
    const payer = generateKeys();
    const payee = generateKeys();
    const e = await api.escrows.create({
      amount: '10',
      asset: 'USDC',
      terms: TITLE_TERMS,
      payer: { publicKey: payer.publicKey },
      payee: { publicKey: payee.publicKey },
    });
    await api.escrows.fund(e.id);
    const failed = await api.escrows.deliver(e.id, signDelivery(payee.secretKey, { escrowId: e.id, payload: { body: 'no title' } }));
    assert.equal(failed.verdict.passed, false);
    assert.equal(failed.proof, undefined);

    const opened = await api.disputes.open(
      e.id,
      signDisputeAction(payer.secretKey, { escrowId: e.id, action: 'dispute.open', reason: 'no title' }),
    );
    assert.equal(opened.openedBy, payer.publicKey);
    const withEvidence = await api.disputes.addEvidence(
      e.id,
      signDisputeAction(payee.secretKey, { escrowId: e.id, action: 'dispute.evidence', note: 'see attached', payload: { title: 'late' } }),
    );
    assert.equal(withEvidence.state, 'under-review');
    assert.equal(withEvidence.evidence[0].contentHash, contentHash({ title: 'late' }));
    const noted = await api.disputes.addEvidence(
      e.id,
      signDisputeAction(payer.secretKey, { escrowId: e.id, action: 'dispute.evidence', note: 'a note alone' }),
    );
    assert.equal(noted.evidence.length, 2);

    const ruling = {
      escrowId: e.id,
      disputeId: opened.id,
      outcome: 'split' as const,
      rationale: 'half done',
      shares: { payerBps: 5000, payeeBps: 5000 },
    };
    const { dispute, proof } = await api.disputes.resolve(e.id, {
      outcome: 'split',
      rationale: 'half done',
      shares: ruling.shares,
      signatures: [signRuling(payer.secretKey, ruling), signRuling(payee.secretKey, ruling)],
    });
    assert.equal(dispute.ruling?.decidedBy, 'co-signature');
    assert.equal(proof.outcome, 'split');
    assert.equal((await api.disputes.get(e.id)).state, 'resolved');
  });

  test('refunds, and retries a settlement custody failed, through the sandbox controls', async () => {
    const a = await api.agents.create({ label: 'payer' });
    const b = await api.agents.create({ label: 'payee' });
    const refundable = await api.escrows.create({ amount: '3', asset: 'USDC', terms: TITLE_TERMS, payerAgentId: a.id, payeeAgentId: b.id });
    await api.escrows.fund(refundable.id);
    assert.equal((await api.escrows.refund(refundable.id)).outcome, 'refunded');

    const e = await api.escrows.create({ amount: '4', asset: 'USDC', terms: TITLE_TERMS, payerAgentId: a.id, payeeAgentId: b.id });
    await api.escrows.fund(e.id);
    assert.deepEqual(await api.sandbox.failNext(1), { failNext: 1 });
    const stuck = await api.escrows.deliver(e.id, { agentId: b.id, payload: { title: 'ok' } });
    assert.equal(stuck.proof, undefined);
    assert.equal((await api.escrows.custody(e.id)).status, 'settle-failed');
    assert.equal((await api.escrows.retryCustody(e.id)).outcome, 'released');
  });

  test('registers, lists and unregisters webhooks, and reads the dead letters', async () => {
    const url = 'http://127.0.0.1:9/client-hook';
    const reg = await api.webhooks.register(url);
    assert.equal(reg.url, url);
    assert.ok((await api.webhooks.list()).webhooks.includes(url));
    assert.deepEqual(await api.webhooks.unregister(url), { ok: true, url });
    assert.ok(Array.isArray((await api.webhooks.deadLetters()).deadLetters));
    assert.equal((await rejects(api.webhooks.redeliver('dlr_01jd0000000000000000000000'))).code, 'not_found');
  });

  test('pays the x402 demo: the offer is a 402, pay() signs it and returns the decoded settlement, over either header name', async () => {
    const offer = await api.x402.offer();
    assert.equal(offer.error.code, 'payment_required');
    assert.equal(offer.accepts[0].resource, 'http://sandbox.local/v1/x402/demo');
    assert.equal((await api.x402.offerV2()).resource.url, 'http://sandbox.local/v1/x402/demo');
    const refused = await rejects(api.x402.demo());
    assert.equal(refused.status, 402);
    assert.equal(refused.code, 'payment_required');
    const buyer = generateKeys();
    for (const v2 of [false, true]) {
      const paid = await api.x402.pay<{ resource: string }>(buyer.secretKey, { v2 });
      assert.equal(paid.resource.resource, 'x402-demo');
      assert.equal(paid.payment.outcome, 'released');
      assert.equal(paid.payment.network, v2 ? 'proof:local' : 'proof-local');
      assert.equal(verifyBundle(await api.proofs.bundle(paid.payment.proofId), { trustedKeys: (await api.issuerKeys()).keys }).ok, true);
    }
  });

  test('turns an error envelope into a typed ApiError with status, code, message, docsUrl and request id', async () => {
    const err = await rejects(api.escrows.get('esc_01jd0000000000000000000000'));
    assert.ok(err instanceof Error);
    assert.equal(err.name, 'ApiError');
    assert.equal(err.status, 404);
    assert.equal(err.code, 'not_found');
    assert.match(err.message, /no escrow esc_01jd/);
    assert.equal(err.docsUrl, '/docs/errors#not_found');
    assert.equal(err.requestId, seen.at(-1));
    assert.match(err.requestId ?? '', /^[0-9a-f-]{36}$/);
    const bad = await rejects(api.escrows.create({ amount: '1', asset: 'USDC', terms: TITLE_TERMS, payerAgentId: 'agt_x' } as never));
    assert.equal(bad.code, 'bad_request');
  });

  test('sends the bearer key on a hosted deployment, where admin methods work with the root key and 401 without one', async () => {
    const root = createClient({ baseUrl: 'http://hosted.local', apiKey: 'client-test-root-key-0123', fetch: inProcess(hosted.app) });
    const anon = createClient({ baseUrl: 'http://hosted.local', fetch: inProcess(hosted.app) });
    assert.equal((await rejects(anon.agents.create())).code, 'unauthorized');
    assert.equal((await anon.log.head()).logSize, 0, 'public routes need no key');
    const minted = await root.admin.createKey({ label: 'ci', rateLimitMax: 50 });
    assert.match(minted.secret, /^esk_/);
    const asMinted = createClient({ baseUrl: 'http://hosted.local', apiKey: minted.secret, fetch: inProcess(hosted.app) });
    assert.equal((await asMinted.agents.create({ label: 'x' })).label, 'x');
    assert.equal((await rejects(asMinted.admin.metrics())).code, 'forbidden');
    assert.ok((await root.admin.listKeys()).keys.some((k) => k.id === minted.id));
    assert.ok((await root.admin.revokeKey(minted.id)).revokedAt);
    assert.equal((await rejects(asMinted.agents.create())).code, 'unauthorized');
    assert.equal(typeof (await root.admin.metrics()).uptimeSeconds, 'number');
    assert.equal(typeof (await root.admin.rate()).windowMs, 'number');
    const rotated = await root.admin.rotateIssuer({ key: `file:${newKeys.issuer}` });
    assert.notEqual(rotated.active.publicKey, rotated.retired.publicKey);
    assert.equal((await rejects(root.sandbox.advanceClock(60))).code, 'forbidden');
  });

  test('moves the sandbox clock forward', async () => {
    const fresh = await makeHarness('pglite');
    try {
      const c = createClient({ baseUrl: 'http://sandbox.local', fetch: (req) => fresh.app.fetch(req) });
      const { now } = await c.sandbox.advanceClock(3600);
      assert.ok(Date.parse(now) - Date.now() > 3_590_000);
    } finally {
      await fresh.close();
    }
  });
});

describe('the client transport', () => {
  const recorded: Request[] = [];
  const fake =
    (status: number, body: string, type = 'application/json') =>
    async (req: Request) => {
      recorded.push(req);
      return new Response(body, { status, headers: { 'content-type': type, 'x-request-id': 'rid-1' } });
    };

  test('joins a base path, encodes path parameters, drops undefined query values and sends the key and Idempotency-Key', async () => {
    const c = createClient({ baseUrl: 'https://api.example/escrow/', apiKey: 'k-123', fetch: fake(200, '{}') });
    await c.escrows.get('esc/1');
    await c.escrows.list({ state: 'funded', cursor: undefined });
    await c.escrows.fund('esc_1', { idempotencyKey: 'idem-1' });
    const [get, list, fund] = recorded.splice(0);
    assert.equal(get.url, 'https://api.example/escrow/v1/escrows/esc%2F1');
    assert.equal(get.headers.get('authorization'), 'Bearer k-123');
    assert.equal(list.url, 'https://api.example/escrow/v1/escrows?state=funded');
    assert.equal(fund.method, 'POST');
    assert.equal(fund.headers.get('idempotency-key'), 'idem-1');
    assert.equal(await fund.text(), '', 'fund sends no body');
  });

  test("reports a non-envelope failure (a proxy's HTML 502) as ApiError http_502", async () => {
    const c = createClient({ baseUrl: 'https://api.example', fetch: fake(502, '<html>bad gateway</html>', 'text/html') });
    const err = await rejects(c.health());
    assert.equal(err.status, 502);
    assert.equal(err.code, 'http_502');
    assert.equal(err.requestId, 'rid-1');
  });

  test('refuses a missing path parameter before sending anything', async () => {
    const c = createClient({ baseUrl: 'https://api.example', fetch: fake(200, '{}') });
    const sent = recorded.length;
    await assert.rejects(c.escrows.get(''), { name: 'TypeError', message: /id is required/ });
    assert.equal(recorded.length, sent);
  });
});

describe('client-side signatures', () => {
  test('verify with node:crypto over the canonical bytes the spec names', () => {
    const k = generateKeys();
    assert.match(k.secretKey, /^[0-9a-f]{64}$/);
    const s = signBody(k.secretKey, { b: 1, a: 'x' });
    assert.equal(s.signer, k.publicKey);
    assert.ok(nodeVerifyHex(k.publicKey, canonicalize({ a: 'x', b: 1 }), s.signature));
    const d = signDelivery(k.secretKey, { escrowId: 'esc_1', payload: { t: 1 }, submittedAt: '2026-11-21T10:00:00.000Z' });
    assert.ok(
      nodeVerifyHex(
        k.publicKey,
        canonicalize({ escrowId: 'esc_1', contentHash: contentHash({ t: 1 }), submittedAt: d.submittedAt }),
        d.signature.signature,
      ),
    );
    const r = signRuling(k.secretKey, { escrowId: 'esc_1', disputeId: 'dsp_1', outcome: 'refund' });
    assert.ok(
      nodeVerifyHex(k.publicKey, canonicalize({ escrowId: 'esc_1', disputeId: 'dsp_1', outcome: 'refund', rationale: '' }), r.signature),
    );
    assert.throws(() => signBody('not-a-key', {}), { name: 'TypeError', message: /secretKey must be 64 lowercase hex/ });
    assert.throws(() => signMandate('XYZ', {} as never), { message: /principalSecretKey/ });
  });
});
