// The wire's statuses and codes, pinned: every status and error code the service's specification names
// in its tables (the error table, the endpoint tables' error columns, authentication, the x402 codes),
// copied here as data, each provoked through app.fetch. A code that moves (a malformed split share
// answered 400 instead of 403 unauthorized_ruling) fails its row. docs/protocol.md §19.2 is the
// documented form of the same table.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createPaymentHeader,
  decodePaymentHeader,
  encodePaymentHeader,
  generateKeys,
  type PaymentPayload,
} from '@escrow-settlement/client';
import { expectError, makeHarness, STORES, type Harness, type Res } from '../harness.ts';
import { agent, clientKey, failedDelivery, funded, PASSING_TERMS, settled } from '../fixtures.ts';
import { bearer, HOSTED, mint, ROOT } from '../admin/helpers.ts';
import { DEMO, offer } from '../x402/helpers.ts';

/** The error table, row for row: code, HTTP status, condition. */
const ERROR_TABLE: Array<[code: string, http: number, condition: string]> = [
  ['bad_request', 400, 'malformed body, invalid JSON, missing required fields, wrong-shaped values'],
  ['unauthorized', 401, 'bearer key required and missing or wrong'],
  ['forbidden', 403, 'admin-only operation by a non-root key, or deployment has no API key configured'],
  [
    'mandate_violation',
    403,
    "escrow would exceed per-escrow cap, cumulative cap, asset allowlist, counterparty allowlist or expiry; or the mandate signature is not the principal's or does not verify",
  ],
  [
    'unauthorized_ruling',
    403,
    'ruling lacks required signatures (both parties, or the named arbiter), or split shares are malformed (not summing to 10000, not integers, or present on a non-split ruling)',
  ],
  ['not_found', 404, 'unknown id or unknown route; for proof of an escrow, the matter has not closed'],
  ['invalid_state', 409, "operation illegal from the escrow's current state"],
  ['unprocessable', 422, 'well-formed request that cannot proceed, e.g. wrong or bad delivery signer, dispute opener not a party'],
  ['payload_too_large', 413, 'body over cap'],
  ['rate_limited', 429, 'over the request budget'],
  [
    'custody_failed',
    502,
    'custody could not settle; journaled; retry via POST .../custody/retry; no proof is issued without a confirmed settlement',
  ],
  ['payment_invalid', 402, 'x402 payment refused'],
];

/** x402 refusals: HTTP 402 with the same envelope and one of these codes. */
const X402_CODES = [
  'malformed_header',
  'version_mismatch',
  'scheme_mismatch',
  'wrong_resource',
  'wrong_payee',
  'wrong_asset',
  'bad_signature',
];

/** The endpoint tables' error columns (and the authentication rules): route, status, code, condition. */
const ENDPOINT_ERRORS: Array<[route: string, http: number, code: string, condition: string]> = [
  ['POST /v1/mandates', 400, 'bad_request', 'missing fields'],
  ['POST /v1/mandates', 403, 'mandate_violation', "signature not the principal's or does not verify"],
  ['GET /v1/mandates/{id}', 404, 'not_found', 'unknown mandate'],
  ['POST /v1/escrows', 400, 'bad_request', 'missing terms or malformed party'],
  ['POST /v1/escrows', 403, 'mandate_violation', 'cap exceeded'],
  ['POST /v1/escrows', 404, 'not_found', 'unknown agent or mandate'],
  ['GET /v1/escrows/{id}', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/fund', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/fund', 409, 'invalid_state', 'if not created'],
  ['POST /v1/escrows/{id}/delivery', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/delivery', 409, 'invalid_state', 'if not funded'],
  ['POST /v1/escrows/{id}/delivery', 422, 'unprocessable', 'wrong signer or bad signature'],
  ['POST /v1/escrows/{id}/refund', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/refund', 409, 'invalid_state', 'not funded, nor delivered with a failed verdict'],
  ['GET /v1/escrows/{id}/custody', 404, 'not_found', 'when no settlement has been attempted'],
  ['POST /v1/escrows/{id}/custody/retry', 404, 'not_found', 'no journaled settlement'],
  ['POST /v1/escrows/{id}/custody/retry', 502, 'custody_failed', 'journal keeps the entry for another retry'],
  ['GET /v1/escrows/{id}/trail', 404, 'not_found', 'unknown escrow'],
  ['GET /v1/escrows/{id}/events', 404, 'not_found', 'unknown escrow'],
  ['GET /v1/escrows/{id}/proof', 404, 'not_found', 'if the matter has not closed'],
  ['POST /v1/escrows/{id}/dispute', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/dispute', 409, 'invalid_state', 'only delivered escrows'],
  ['POST /v1/escrows/{id}/dispute', 422, 'unprocessable', 'opener is not a party'],
  ['GET /v1/escrows/{id}/dispute', 404, 'not_found', 'no dispute'],
  ['POST /v1/escrows/{id}/dispute/evidence', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/dispute/evidence', 409, 'invalid_state', 'the dispute is resolved'],
  ['POST /v1/escrows/{id}/dispute/resolve', 403, 'unauthorized_ruling', 'lacking signatures, or malformed shares'],
  ['POST /v1/escrows/{id}/dispute/resolve', 404, 'not_found', 'unknown escrow'],
  ['POST /v1/escrows/{id}/dispute/resolve', 409, 'invalid_state', 'already resolved'],
  ['GET /v1/proofs/{id}', 404, 'not_found', 'unknown proof'],
  ['GET /v1/proofs/{id}/verify', 404, 'not_found', 'unknown proof'],
  ['POST /v1/verify', 400, 'bad_request', 'body is not a proof document'],
  ['POST /v1/verify', 413, 'payload_too_large', 'over 32 KB'],
  ['POST /v1/verify', 429, 'rate_limited', 'over budget'],
  ['GET /v1/log/head', 429, 'rate_limited', 'over budget'],
  ['GET /v1/log/proof/{proofId}', 404, 'not_found', 'unknown proof'],
  ['GET /v1/log/consistency/{firstSize}/{secondSize}', 400, 'bad_request', 'unless 1 <= first <= second <= current'],
  ['POST /v1/webhooks', 400, 'bad_request', 'when url is missing'],
  ['GET /v1/x402/demo', 402, 'payment_required', 'without the header: 402 with payment requirements'],
  ['DELETE /v1/admin/keys/{keyId}', 404, 'not_found', 'unknown key id'],
  ['(hosted) any /v1 route', 401, 'unauthorized', 'missing or wrong bearer key'],
  ['(hosted) admin route', 403, 'forbidden', 'a non-root key'],
  ['(open sandbox) admin route', 403, 'forbidden', 'no API key configured'],
];

const UNKNOWN_ESC = 'esc_01aaaaaaaaaaaaaaaaaaaaaaaa';
const UNKNOWN_PRF = 'prf_01aaaaaaaaaaaaaaaaaaaaaaaa';

interface World {
  /** The open sandbox. */
  s: Harness;
  /** A hosted deployment (API_KEY) whose public and verify budgets are one request a window. */
  hosted: Harness;
}

/** A mandate for 10 per escrow, registered; its agent and a payee. */
async function mandate(h: Harness, sign = true) {
  const principal = clientKey();
  const payer = await agent(h, 'agent');
  const payee = await agent(h, 'payee');
  const caps = {
    agent: payer.publicKey,
    perEscrowMax: '10',
    cumulativeMax: '25',
    allowedAssets: ['USDC'],
    expiresAt: '2099-01-01T00:00:00.000Z',
  };
  const other = clientKey();
  const body = {
    principal: principal.publicKey,
    caps,
    signature: sign
      ? { signer: principal.publicKey, signature: principal.sign({ principal: principal.publicKey, caps }) }
      : { signer: other.publicKey, signature: other.sign({ principal: principal.publicKey, caps }) },
  };
  const r = await h.req('POST', '/v1/mandates', body);
  return { r, payer, payee };
}

async function disputed(h: Harness) {
  const e = await failedDelivery(h);
  const d = await h.req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id });
  assert.equal(d.status, 201, d.text);
  return e;
}

async function custodyFailed(h: Harness) {
  const e = await funded(h);
  assert.equal((await h.req('POST', '/v1/sandbox/custody/fail-next', { count: 1 })).status, 200);
  const d = await h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 't' } });
  assert.equal(d.status, 201, d.text);
  assert.equal((await h.req('POST', '/v1/sandbox/custody/fail-next', { count: 1 })).status, 200);
  return h.req('POST', `/v1/escrows/${e.id}/custody/retry`);
}

/** Each value: requests that must each answer the row's status and code (a row with several conditions has several). */
const PROVOKE_ERROR: Record<string, (w: World) => Promise<Res[]>> = {
  bad_request: async ({ s }) => {
    const e = await agent(s);
    return [
      await s.req('POST', '/v1/escrows', '{"amount": "1",'),
      await s.req('POST', '/v1/escrows', { amount: '1', asset: 'USDC', payerAgentId: e.id, payeeAgentId: e.id }),
      await s.req('POST', '/v1/escrows', { amount: 1, asset: 'USDC', terms: PASSING_TERMS, payerAgentId: e.id, payeeAgentId: e.id }),
    ];
  },
  unauthorized: async ({ hosted }) => [
    await hosted.req('GET', '/v1/escrows'),
    await hosted.req('GET', '/v1/escrows', undefined, bearer('not-the-key')),
  ],
  forbidden: async ({ s, hosted }) => [
    await s.req('GET', '/v1/admin/metrics'),
    await hosted.req('GET', '/v1/admin/metrics', undefined, bearer((await mint(hosted)).secret)),
  ],
  mandate_violation: async ({ s }) => {
    const m = await mandate(s);
    assert.equal(m.r.status, 201, m.r.text);
    const over = await s.req('POST', '/v1/escrows', {
      amount: '10.5',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: m.payer.id,
      payeeAgentId: m.payee.id,
      mandateId: m.r.body.id,
    });
    return [over, (await mandate(s, false)).r];
  },
  unauthorized_ruling: async ({ s }) => {
    const e = await disputed(s);
    const both = [e.payer.id, e.payee.id];
    const resolve = (body: Record<string, unknown>) => s.req('POST', `/v1/escrows/${e.id}/dispute/resolve`, body);
    return [
      await resolve({ outcome: 'refund', agentIds: [e.payer.id] }),
      await resolve({ outcome: 'split', shares: { payerBps: 5000, payeeBps: 4000 }, agentIds: both }),
      await resolve({ outcome: 'split', shares: { payerBps: 5000.5, payeeBps: 4999.5 }, agentIds: both }),
      await resolve({ outcome: 'split', shares: { payerBps: '5000', payeeBps: '5000' }, agentIds: both }),
      await resolve({ outcome: 'release', shares: { payerBps: 5000, payeeBps: 5000 }, agentIds: both }),
      await resolve({ outcome: 'split', agentIds: both }),
    ];
  },
  not_found: async ({ s }) => [
    await s.req('GET', `/v1/escrows/${UNKNOWN_ESC}`),
    await s.req('GET', '/v1/no-such-route'),
    await s.req('GET', `/v1/escrows/${(await funded(s)).id}/proof`),
  ],
  invalid_state: async ({ s }) => [await s.req('POST', `/v1/escrows/${(await funded(s)).id}/fund`)],
  unprocessable: async ({ s }) => {
    const e = await failedDelivery(s);
    const stranger = await agent(s);
    const f = await funded(s);
    return [
      await s.req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: stranger.id }),
      await s.req('POST', `/v1/escrows/${f.id}/delivery`, { agentId: f.payer.id, payload: { title: 't' } }),
    ];
  },
  payload_too_large: async ({ s }) => [await s.req('POST', '/v1/verify', { pad: 'x'.repeat(33 * 1024) })],
  rate_limited: async ({ hosted }) => {
    const ip = { 'x-test-ip': '198.51.100.7' };
    await hosted.req('POST', '/v1/verify', {}, ip);
    return [await hosted.req('POST', '/v1/verify', {}, ip)];
  },
  custody_failed: async ({ s }) => [await custodyFailed(s)],
  payment_invalid: async ({ s }) => {
    const o = await offer(s);
    return [await s.req('GET', DEMO, undefined, { 'X-PAYMENT': createPaymentHeader(o, generateKeys().secretKey, { value: '0.009999' }) })];
  },
};

/** Decode an x402 payment header, change it, encode it again. */
function tamper(header: string, change: (p: PaymentPayload & Record<string, any>) => void): string {
  const p = decodePaymentHeader(header) as PaymentPayload & Record<string, any>;
  change(p);
  return encodePaymentHeader(p);
}

const PROVOKE_X402: Record<string, (w: World) => Promise<Res>> = Object.fromEntries(
  (
    [
      ['malformed_header', () => '%%% not base64 %%%'],
      ['version_mismatch', (o, k) => tamper(createPaymentHeader(o, k), (p) => (p.x402Version = 3))],
      ['scheme_mismatch', (o, k) => createPaymentHeader({ ...o, scheme: 'exact' }, k)],
      ['wrong_resource', (o, k) => createPaymentHeader({ ...o, resource: 'http://test.local/v1/x402/other' }, k)],
      ['wrong_payee', (o, k) => createPaymentHeader({ ...o, payTo: generateKeys().publicKey }, k)],
      ['wrong_asset', (o, k) => createPaymentHeader({ ...o, asset: 'EURC' }, k)],
      ['bad_signature', (o, k) => tamper(createPaymentHeader(o, k), (p) => (p.payload.authorization.value = '100'))],
    ] as Array<[string, (o: Awaited<ReturnType<typeof offer>>, secretKey: string) => string]>
  ).map(([code, build]) => [
    code,
    async ({ s }: World) => s.req('GET', DEMO, undefined, { 'X-PAYMENT': build(await offer(s), generateKeys().secretKey) }),
  ]),
);

const PROVOKE_ENDPOINT: Record<string, (w: World) => Promise<Res>> = {
  'POST /v1/mandates 400': ({ s }) => s.req('POST', '/v1/mandates', { principal: clientKey().publicKey }),
  'POST /v1/mandates 403': async ({ s }) => (await mandate(s, false)).r,
  'GET /v1/mandates/{id} 404': ({ s }) => s.req('GET', '/v1/mandates/mnd_01aaaaaaaaaaaaaaaaaaaaaaaa'),
  'POST /v1/escrows 400': async ({ s }) => {
    const a = await agent(s);
    return s.req('POST', '/v1/escrows', {
      amount: '1',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payer: { publicKey: 'nope' },
      payeeAgentId: a.id,
    });
  },
  'POST /v1/escrows 403': (w) => PROVOKE_ERROR.mandate_violation(w).then((r) => r[0]),
  'POST /v1/escrows 404': async ({ s }) => {
    const a = await agent(s);
    return s.req('POST', '/v1/escrows', {
      amount: '1',
      asset: 'USDC',
      terms: PASSING_TERMS,
      payerAgentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa',
      payeeAgentId: a.id,
    });
  },
  'GET /v1/escrows/{id} 404': ({ s }) => s.req('GET', `/v1/escrows/${UNKNOWN_ESC}`),
  'POST /v1/escrows/{id}/fund 404': ({ s }) => s.req('POST', `/v1/escrows/${UNKNOWN_ESC}/fund`),
  'POST /v1/escrows/{id}/fund 409': async ({ s }) => s.req('POST', `/v1/escrows/${(await funded(s)).id}/fund`),
  'POST /v1/escrows/{id}/delivery 404': ({ s }) =>
    s.req('POST', `/v1/escrows/${UNKNOWN_ESC}/delivery`, { agentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa', payload: {} }),
  'POST /v1/escrows/{id}/delivery 409': async ({ s }) => {
    const e = await settled(s);
    return s.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 't' } });
  },
  'POST /v1/escrows/{id}/delivery 422': (w) => PROVOKE_ERROR.unprocessable(w).then((r) => r[1]),
  'POST /v1/escrows/{id}/refund 404': ({ s }) => s.req('POST', `/v1/escrows/${UNKNOWN_ESC}/refund`),
  'POST /v1/escrows/{id}/refund 409': async ({ s }) => s.req('POST', `/v1/escrows/${(await settled(s)).id}/refund`),
  'GET /v1/escrows/{id}/custody 404': async ({ s }) => s.req('GET', `/v1/escrows/${(await funded(s)).id}/custody`),
  'POST /v1/escrows/{id}/custody/retry 404': async ({ s }) => s.req('POST', `/v1/escrows/${(await funded(s)).id}/custody/retry`),
  'POST /v1/escrows/{id}/custody/retry 502': ({ s }) => custodyFailed(s),
  'GET /v1/escrows/{id}/trail 404': ({ s }) => s.req('GET', `/v1/escrows/${UNKNOWN_ESC}/trail`),
  'GET /v1/escrows/{id}/events 404': ({ s }) => s.req('GET', `/v1/escrows/${UNKNOWN_ESC}/events`),
  'GET /v1/escrows/{id}/proof 404': async ({ s }) => s.req('GET', `/v1/escrows/${(await funded(s)).id}/proof`),
  'POST /v1/escrows/{id}/dispute 404': ({ s }) =>
    s.req('POST', `/v1/escrows/${UNKNOWN_ESC}/dispute`, { agentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa' }),
  'POST /v1/escrows/{id}/dispute 409': async ({ s }) => {
    const e = await funded(s);
    return s.req('POST', `/v1/escrows/${e.id}/dispute`, { agentId: e.payer.id });
  },
  'POST /v1/escrows/{id}/dispute 422': (w) => PROVOKE_ERROR.unprocessable(w).then((r) => r[0]),
  'GET /v1/escrows/{id}/dispute 404': async ({ s }) => s.req('GET', `/v1/escrows/${(await funded(s)).id}/dispute`),
  'POST /v1/escrows/{id}/dispute/evidence 404': ({ s }) =>
    s.req('POST', `/v1/escrows/${UNKNOWN_ESC}/dispute/evidence`, { agentId: 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa', note: 'n' }),
  'POST /v1/escrows/{id}/dispute/evidence 409': async ({ s }) => {
    const e = await disputed(s);
    assert.equal(
      (await s.req('POST', `/v1/escrows/${e.id}/dispute/resolve`, { outcome: 'refund', agentIds: [e.payer.id, e.payee.id] })).status,
      200,
    );
    return s.req('POST', `/v1/escrows/${e.id}/dispute/evidence`, { agentId: e.payer.id, note: 'late' });
  },
  'POST /v1/escrows/{id}/dispute/resolve 403': (w) => PROVOKE_ERROR.unauthorized_ruling(w).then((r) => r[1]),
  'POST /v1/escrows/{id}/dispute/resolve 404': ({ s }) =>
    s.req('POST', `/v1/escrows/${UNKNOWN_ESC}/dispute/resolve`, { outcome: 'refund' }),
  'POST /v1/escrows/{id}/dispute/resolve 409': async ({ s }) => {
    const e = await disputed(s);
    const body = { outcome: 'refund', agentIds: [e.payer.id, e.payee.id] };
    assert.equal((await s.req('POST', `/v1/escrows/${e.id}/dispute/resolve`, body)).status, 200);
    return s.req('POST', `/v1/escrows/${e.id}/dispute/resolve`, { ...body, outcome: 'release' });
  },
  'GET /v1/proofs/{id} 404': ({ s }) => s.req('GET', `/v1/proofs/${UNKNOWN_PRF}`),
  'GET /v1/proofs/{id}/verify 404': ({ s }) => s.req('GET', `/v1/proofs/${UNKNOWN_PRF}/verify`),
  'POST /v1/verify 400': ({ s }) => s.req('POST', '/v1/verify', { not: 'a proof' }),
  'POST /v1/verify 413': (w) => PROVOKE_ERROR.payload_too_large(w).then((r) => r[0]),
  'POST /v1/verify 429': (w) => PROVOKE_ERROR.rate_limited(w).then((r) => r[0]),
  'GET /v1/log/head 429': async ({ hosted }) => {
    const ip = { 'x-test-ip': '198.51.100.8' };
    await hosted.req('GET', '/v1/log/head', undefined, ip);
    return hosted.req('GET', '/v1/log/head', undefined, ip);
  },
  'GET /v1/log/proof/{proofId} 404': ({ s }) => s.req('GET', `/v1/log/proof/${UNKNOWN_PRF}`),
  'GET /v1/log/consistency/{firstSize}/{secondSize} 400': ({ s }) => s.req('GET', '/v1/log/consistency/0'),
  'POST /v1/webhooks 400': ({ s }) => s.req('POST', '/v1/webhooks', {}),
  'GET /v1/x402/demo 402': ({ s }) => s.req('GET', DEMO),
  'DELETE /v1/admin/keys/{keyId} 404': ({ hosted }) =>
    hosted.req('DELETE', '/v1/admin/keys/key_01aaaaaaaaaaaaaaaaaaaaaaaa', undefined, bearer(ROOT)),
  '(hosted) any /v1 route 401': ({ hosted }) => hosted.req('GET', '/v1/escrows'),
  '(hosted) admin route 403': (w) => PROVOKE_ERROR.forbidden(w).then((r) => r[1]),
  '(open sandbox) admin route 403': ({ s }) => s.req('GET', '/v1/admin/keys'),
};

test('every row has its provocation and every provocation its row', () => {
  assert.deepEqual(Object.keys(PROVOKE_ERROR).sort(), ERROR_TABLE.map(([code]) => code).sort());
  assert.deepEqual(Object.keys(PROVOKE_X402).sort(), [...X402_CODES].sort());
  assert.deepEqual(Object.keys(PROVOKE_ENDPOINT).sort(), ENDPOINT_ERRORS.map(([route, http]) => `${route} ${http}`).sort());
});

for (const kind of STORES) {
  describe(`the specification's statuses and codes [${kind}]`, () => {
    const w = {} as World;
    before(async () => {
      w.s = await makeHarness(kind);
      w.hosted = await makeHarness(kind, { ...HOSTED, VERIFY_RATE_LIMIT_MAX: '1', PUBLIC_RATE_LIMIT_MAX: '1' });
    });
    after(async () => {
      await w.s?.close();
      await w.hosted?.close();
    });

    for (const [code, http, condition] of ERROR_TABLE) {
      test(`error table: ${http} ${code}: ${condition}`, async () => {
        const answers = await PROVOKE_ERROR[code](w);
        assert.ok(answers.length > 0);
        answers.forEach((r, i) => {
          try {
            expectError(r, http, code);
          } catch (err) {
            throw new Error(`request ${i + 1} of ${answers.length}: ${(err as Error).message}`);
          }
        });
      });
    }

    for (const code of X402_CODES) {
      test(`x402 refusal: 402 ${code}`, async () => {
        expectError(await PROVOKE_X402[code](w), 402, code);
      });
    }

    for (const [route, http, code, condition] of ENDPOINT_ERRORS) {
      test(`${route}: ${http} ${code} (${condition})`, async () => {
        expectError(await PROVOKE_ENDPOINT[`${route} ${http}`](w), http, code);
      });
    }
  });
}
