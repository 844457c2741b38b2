// AP2 v0.2 Payment Mandates as an escrow's authority (docs/ap2.md): chains minted by test/ap2Mint.ts (node:crypto, not the
// service's code), every refusal with its code and the check it names, units, budget (and its race), recurrence on the sandbox clock.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, verify as nodeVerify } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main as cli } from '@escrow-settlement/client/cli';
import { expectError, makeHarness, STORES, type Harness, type Res } from '../harness.ts';
import { agent, PASSING_TERMS } from '../fixtures.ts';
import { connectHttp, fails, ok } from '../mcp/helpers.ts';
import { ap2Issuers } from '@escrow-settlement/protocol/ap2/chain';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import type { Bundle } from '@escrow-settlement/protocol/types';
import {
  b64u,
  chain,
  closedMandate,
  nestedJson,
  jwks,
  openCheckout,
  openMandate,
  p256Key,
  sha256hex,
  sdHash,
  type ClosedOpts,
  type OpenOpts,
} from '../ap2Mint.ts';

const ISSUER = p256Key('issuer-1');
const STRANGER = p256Key('issuer-1'); // same kid, another key: its signatures must not verify
const OTHER_ISSUER = p256Key('issuer-2'); // a kid nobody trusts
const PISP = { legal_name: 'Escrow Settlement Ltd', brand_name: 'Escrow', domain_name: 'escrow.example' };
const ENV = { AP2_PISP: JSON.stringify(PISP), AP2_AUDIENCE: 'https://escrow.example' };

const RECEIPT = p256Key();
const receiptSecret = () => new Uint8Array(Buffer.from((RECEIPT.privateKey.export({ format: 'jwk' }) as { d: string }).d, 'base64url'));

export async function ap2Harness(kind: (typeof STORES)[number]): Promise<Harness> {
  return makeHarness(kind, ENV, undefined, { ap2Issuers: ap2Issuers(jwks(ISSUER)), ap2ReceiptKey: receiptSecret() });
}

interface World {
  h: Harness;
  payer: { id: string; publicKey: string };
  payee: { id: string; publicKey: string };
}

const now = async (h: Harness) => Math.floor(Date.parse((await h.req('GET', '/v1/sandbox/clock')).body.now) / 1000);

async function challenge(h: Harness) {
  const r = await h.req('POST', '/v1/ap2/challenge');
  assert.equal(r.status, 201, r.text);
  return r.body as { nonce: string; audience: string; expiresAt: string };
}

interface Try {
  constraints?: object[];
  open?: Partial<OpenOpts>;
  closed?: Partial<ClosedOpts>;
  amount?: string;
  asset?: string;
  minor?: number;
  checkoutMandate?: string;
  /** An open mandate minted before (its agent key as open.agent): another payment under the same mandate. */
  openToken?: string;
  /** Rewrites the chain before it is sent. */
  tamper?: (chain: string) => string;
  body?: Record<string, unknown>;
}

/** Mints a chain for a fresh challenge and creates an escrow under it. */
async function present(w: World, t: Try = {}) {
  const agentKey = t.open?.agent ?? p256Key();
  const clock = await now(w.h);
  const open =
    t.openToken ??
    openMandate({
      issuer: ISSUER,
      agent: agentKey,
      constraints: t.constraints ?? [{ type: 'payment.amount_range', currency: 'USD', max: 50_000, min: 1 }],
      iat: clock - 10,
      exp: clock + 400 * 86_400,
      ...t.open,
    });
  const c = await challenge(w.h);
  const closed = closedMandate({
    agent: agentKey,
    open,
    aud: c.audience,
    nonce: c.nonce,
    payeeId: w.payee.publicKey,
    amount: t.minor ?? 19_900,
    currency: 'USD',
    iat: clock,
    ...t.closed,
  });
  const ch = chain(open, closed);
  const r = await w.h.req('POST', '/v1/escrows', {
    amount: t.amount ?? '199',
    asset: t.asset ?? 'USD',
    terms: PASSING_TERMS,
    payerAgentId: w.payer.id,
    payeeAgentId: w.payee.id,
    ap2: { paymentMandate: t.tamper ? t.tamper(ch) : ch, ...(t.checkoutMandate ? { checkoutMandate: t.checkoutMandate } : {}) },
    ...t.body,
  });
  return { r, open, closed, chain: ch, nonce: c.nonce, agentKey };
}

const refused = (r: Res, field: string) => {
  const msg = expectError(r, 422, 'mandate_violation');
  assert.ok(msg.startsWith(`${field}:`), `expected ${field}, got: ${msg}`);
};

for (const kind of STORES) {
  describe(`AP2 Payment Mandates [${kind}]`, () => {
    const w = {} as World;
    before(async () => {
      w.h = await ap2Harness(kind);
      w.payer = await agent(w.h, 'payer');
      w.payee = await agent(w.h, 'payee');
    });
    after(async () => w.h?.close());

    test('a challenge is a nonce, the audience and when it expires (5 minutes)', async () => {
      const c = await challenge(w.h);
      assert.deepEqual(Object.keys(c).sort(), ['audience', 'expiresAt', 'nonce']);
      assert.equal(c.audience, 'https://escrow.example');
      const left = Date.parse(c.expiresAt) - (await now(w.h)) * 1000;
      assert.ok(left > 290_000 && left <= 301_000, String(left));
      assert.notEqual((await challenge(w.h)).nonce, c.nonce);
    });

    test('a valid chain creates the escrow; the trail records the chain, mandateHash is the closed token hash', async () => {
      const { r, open, closed } = await present(w);
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.mandateHash, sha256hex(closed));
      assert.equal(r.body.mandateId, undefined);
      const trail = await w.h.req('GET', `/v1/escrows/${r.body.id}/trail`);
      const tx = JSON.parse(Buffer.from(closed.split('~')[1], 'base64url').toString())[1].transaction_id;
      assert.deepEqual(trail.body.entries[0].body.ap2, { openHash: sha256hex(open), closedHash: sha256hex(closed), transactionId: tx });
    });

    test('the same closed mandate twice: the nonce is spent (409); a fresh nonce with the same transaction_id under the same mandate: 409', async () => {
      const first = await present(w);
      assert.equal(first.r.status, 201, first.r.text);
      const again = await w.h.req('POST', '/v1/escrows', {
        amount: '199',
        asset: 'USD',
        terms: PASSING_TERMS,
        payerAgentId: w.payer.id,
        payeeAgentId: w.payee.id,
        ap2: { paymentMandate: first.chain },
      });
      assert.match(expectError(again, 409, 'replayed'), /^ap2\.nonce:/);
      const tx = b64u(randomBytes(32));
      const agentKey = p256Key();
      const once = await present(w, { open: { agent: agentKey }, closed: { transactionId: tx } });
      assert.equal(once.r.status, 201);
      const twice = await present(w, { open: { agent: agentKey }, openToken: once.open, closed: { transactionId: tx } });
      assert.match(expectError(twice.r, 409, 'replayed'), /^ap2\.transaction_id:/);
    });

    const cases: Array<[string, string, () => Try | Promise<Try>]> = [
      ['an issuer kid nobody trusts', 'ap2.issuer', () => ({ open: { issuer: OTHER_ISSUER } })],
      ['an issuer signature by another key under a trusted kid', 'ap2.signature', () => ({ open: { issuer: STRANGER } })],
      ['a closed mandate signed by a key its cnf does not name', 'ap2.signature', () => ({ closed: { agent: p256Key() } })],
      [
        'a disclosure no digest references',
        'ap2.disclosure',
        () => ({ tamper: (c) => c.replace('~~', `~${b64u(JSON.stringify(['salt', { extra: 1 }]))}~~`) }),
      ],
      ['an open mandate of another vct', 'ap2.vct', () => ({ open: { extra: { vct: 'mandate.checkout.open.1' } } })],
      ['a closed mandate of another vct', 'ap2.vct', () => ({ closed: { mandate: { vct: 'mandate.payment.open.1' } } })],
      [
        'a closed mandate whose sd_hash is not the open token',
        'ap2.sd_hash',
        () => ({ closed: { claims: { sd_hash: b64u(randomBytes(32)) } } }),
      ],
      ['a closed mandate for another audience', 'ap2.aud', () => ({ closed: { aud: 'https://elsewhere.example' } })],
      ['a nonce this service never issued', 'ap2.nonce', () => ({ closed: { nonce: b64u(randomBytes(32)) } })],
      ['an expired open mandate', 'ap2.exp', async () => ({ open: { exp: (await now(w.h)) - 1 } })],
      ['a closed mandate issued in the future', 'ap2.iat', async () => ({ closed: { iat: (await now(w.h)) + 3600 } })],
      ['a closed mandate of another typ', 'ap2.typ', () => ({ closed: { header: { typ: 'JWT' } } })],
      ['an amount that is not the escrow amount', 'ap2.amount', () => ({ minor: 19_901 })],
      ['an escrow amount that is no whole number of cents', 'ap2.amount', () => ({ amount: '199.005' })],
      ['a currency that is not the asset', 'ap2.amount', () => ({ closed: { currency: 'EUR' } })],
      ['an asset that is not an ISO 4217 code', 'ap2.amount', () => ({ asset: 'USDC', closed: { currency: 'USDC' } })],
      ['a fractional amount', 'ap2.amount', () => ({ minor: 199.5 })],
      ['a payee id that is not the payee key', 'ap2.payee', () => ({ closed: { payeeId: 'merchant_1' } })],
      ['a pisp that is not this service', 'ap2.pisp', () => ({ closed: { mandate: { pisp: { ...PISP, domain_name: 'other.example' } } } })],
      [
        'an amount above amount_range.max',
        'ap2.amount_range',
        () => ({ constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 19_899 }] }),
      ],
      [
        'an amount below amount_range.min',
        'ap2.amount_range',
        () => ({ constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 90_000, min: 20_000 }] }),
      ],
      [
        'a decimal amount_range bound',
        'ap2.amount_range',
        () => ({ constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 100.5 }] }),
      ],
      [
        'a payee not among allowed_payees',
        'ap2.allowed_payees',
        () => ({ constraints: [{ type: 'payment.allowed_payees', allowed: [{ id: 'f'.repeat(64), name: 'Demo Merchant' }] }] }),
      ],
      [
        'an allowed payee whose name differs',
        'ap2.allowed_payees',
        () => ({ constraints: [{ type: 'payment.allowed_payees', allowed: [{ id: w.payee.publicKey, name: 'Someone Else' }] }] }),
      ],
      [
        'an instrument not among allowed_payment_instruments',
        'ap2.allowed_payment_instruments',
        () => ({ constraints: [{ type: 'payment.allowed_payment_instruments', allowed: [{ id: 'card-2', type: 'card' }] }] }),
      ],
      [
        'a service not among allowed_pisps',
        'ap2.allowed_pisps',
        () => ({ constraints: [{ type: 'payment.allowed_pisps', allowed: [{ ...PISP, brand_name: 'Other' }] }] }),
      ],
      [
        'an execution window that ended (compared as instants: 23:00 at -02:00 is 01:00Z the next day)',
        'ap2.execution_date',
        () => ({ constraints: [{ type: 'payment.execution_date', not_after: '2020-01-01T23:00:00-02:00' }] }),
      ],
      [
        'an execution window not yet open',
        'ap2.execution_date',
        () => ({ constraints: [{ type: 'payment.execution_date', not_before: '9999-01-01' }] }),
      ],
      [
        'a date-time without a zone',
        'ap2.execution_date',
        () => ({ constraints: [{ type: 'payment.execution_date', not_after: '2999-01-01T00:00:00' }] }),
      ],
      [
        'an unknown constraint type (fail closed)',
        'ap2.constraints',
        () => ({ constraints: [{ type: 'payment.loyalty_points', max: 1 }] }),
      ],
      ['a budget in another currency', 'ap2.budget', () => ({ constraints: [{ type: 'payment.budget', currency: 'EUR', max: 1000 }] })],
      ['a budget the payment exceeds', 'ap2.budget', () => ({ constraints: [{ type: 'payment.budget', currency: 'USD', max: 198.99 }] })],
      [
        'recurrence without a budget beside it',
        'ap2.agent_recurrence',
        () => ({
          constraints: [
            { type: 'payment.amount_range', currency: 'USD', max: 90_000 },
            { type: 'payment.agent_recurrence', frequency: 'DAILY' },
          ],
        }),
      ],
      [
        'a payment.reference without the checkout mandate',
        'ap2.reference',
        () => ({ constraints: [{ type: 'payment.reference', conditional_transaction_id: b64u(randomBytes(32)) }] }),
      ],
      [
        'a payment.reference naming another checkout',
        'ap2.reference',
        () => ({
          constraints: [{ type: 'payment.reference', conditional_transaction_id: b64u(randomBytes(32)) }],
          checkoutMandate: openCheckout(ISSUER, p256Key()).token,
        }),
      ],
      [
        'an open mandate whose pre-set payee differs',
        'ap2.payee',
        () => ({ open: { extra: { payee: { id: 'e'.repeat(64), name: 'Demo Merchant' } } } }),
      ],
    ];
    for (const [what, field, make] of cases) {
      test(`refused 422 mandate_violation naming ${field}: ${what}`, async () => {
        const { r } = await present(w, await make());
        refused(r, field);
      });
    }

    test('a refused chain leaves nothing behind: its nonce and transaction_id stay usable', async () => {
      const tx = b64u(randomBytes(32));
      const agentKey = p256Key();
      const bad = await present(w, {
        open: { agent: agentKey },
        closed: { transactionId: tx, amount: 20_000 },
        amount: '200',
        constraints: [{ type: 'payment.amount_range', currency: 'USD', max: 19_900 }],
      });
      refused(bad.r, 'ap2.amount_range');
      assert.equal((await present(w, { open: { agent: agentKey }, openToken: bad.open, closed: { transactionId: tx } })).r.status, 201);
    });

    test('malformed: a chain that is not two SD-JWTs, and ap2 with a mandateId, are 400 naming the field', async () => {
      const bad = await present(w, { tamper: (c) => c.replace('~~', '~') });
      assert.match(expectError(bad.r, 400, 'bad_request'), /ap2\.paymentMandate/);
      const both = await present(w, { body: { mandateId: 'mnd_01' } });
      assert.match(expectError(both.r, 400, 'bad_request'), /mandateId or ap2/);
    });

    test('payment.reference is satisfied by the open checkout mandate it names', async () => {
      const checkout = openCheckout(ISSUER, p256Key());
      const ok = await present(w, {
        constraints: [{ type: 'payment.reference', conditional_transaction_id: checkout.hash }],
        checkoutMandate: checkout.token,
      });
      assert.equal(ok.r.status, 201, ok.r.text);
    });

    test('every constraint satisfied at once, the payee listed by id, name and website', async () => {
      const r = await present(w, {
        constraints: [
          { type: 'payment.amount_range', currency: 'USD', max: 19_900, min: 19_900 },
          {
            type: 'payment.allowed_payees',
            allowed: [{ id: w.payee.publicKey, name: 'Demo Merchant', website: 'https://merchant.example' }],
          },
          { type: 'payment.allowed_payment_instruments', allowed: [{ id: 'card-1', type: 'card' }] },
          { type: 'payment.allowed_pisps', allowed: [PISP] },
          { type: 'payment.execution_date', not_before: '2000-01-01', not_after: '9999-12-31' },
          { type: 'payment.budget', currency: 'USD', max: 199 },
          { type: 'payment.agent_recurrence', frequency: 'ON_DEMAND', max_occurrences: 1 },
        ],
        closed: { mandate: { pisp: PISP } },
      });
      assert.equal(r.r.status, 201, r.r.text);
    });

    test('minor units follow ISO 4217: JPY has none, BHD three', async () => {
      const jpy = await present(w, {
        amount: '500',
        asset: 'JPY',
        minor: 500,
        closed: { currency: 'JPY' },
        constraints: [{ type: 'payment.budget', currency: 'JPY', max: 500 }],
      });
      assert.equal(jpy.r.status, 201, jpy.r.text);
      const bhd = await present(w, { amount: '1.234', asset: 'BHD', minor: 1234, closed: { currency: 'BHD' }, constraints: [] });
      assert.equal(bhd.r.status, 201, bhd.r.text);
      refused(
        (await present(w, { amount: '500', asset: 'JPY', minor: 50_000, closed: { currency: 'JPY' }, constraints: [] })).r,
        'ap2.amount',
      );
    });

    test("minor units come from the service's ISO 4217 table, not the runtime's CLDR data: HUF and IDR 2, IQD 3, CLF 4", async () => {
      // CLDR (Intl) gives HUF 0 digits: a mandate capped at 5000 minor units (50.00 HUF) then let 5000 HUF through.
      const capped = [{ type: 'payment.amount_range', currency: 'HUF', max: 5000 }];
      refused(
        (await present(w, { amount: '5000', asset: 'HUF', minor: 500_000, closed: { currency: 'HUF' }, constraints: capped })).r,
        'ap2.amount_range',
      );
      const huf = await present(w, { amount: '49.5', asset: 'HUF', minor: 4950, closed: { currency: 'HUF' }, constraints: capped });
      assert.equal(huf.r.status, 201, huf.r.text);
      refused(
        (await present(w, { amount: '5000', asset: 'HUF', minor: 5000, closed: { currency: 'HUF' }, constraints: [] })).r,
        'ap2.amount',
      );
      const rows: Array<[asset: string, amount: string, minor: number]> = [
        ['IDR', '15000.5', 1_500_050],
        ['COP', '12.34', 1234],
        ['PKR', '1', 100],
        ['IQD', '1.5', 1500],
        ['CLF', '2.5', 25_000],
        ['UYW', '0.0001', 1],
        ['KRW', '700', 700],
      ];
      for (const [asset, amount, minor] of rows) {
        const r = await present(w, { amount, asset, minor, closed: { currency: asset }, constraints: [] });
        assert.equal(r.r.status, 201, `${asset}: ${r.r.text}`);
      }
      // Not on ISO 4217 list one (a withdrawn code, an unassigned one), or on it with no minor unit (gold): refused.
      for (const asset of ['ANG', 'HRK', 'ABC', 'XAU', 'XXX']) {
        const r = (await present(w, { amount: '1', asset, minor: 100, closed: { currency: asset }, constraints: [] })).r;
        refused(r, 'ap2.amount');
        assert.match(r.body.error.message, asset.startsWith('X') ? /no minor unit/ : /not a current ISO 4217 currency code/, asset);
      }
    });

    test('claims nest at most 32 levels: a deeper claim is 422 naming ap2.depth (9,000 levels too), never a 500', async () => {
      // The claim is written as text ("@" replaced before encoding): JSON.stringify would overflow at 9,000 levels.
      const deep = (levels: number) => ({ mandate: { note: '@' }, edit: (j: string) => j.replace('"@"', nestedJson(levels)) });
      // The closed mandate is level 3 (payload, delegate_payload, the mandate): 29 more levels reach 32.
      const ok = await present(w, { closed: deep(29) });
      assert.equal(ok.r.status, 201, ok.r.text);
      refused((await present(w, { closed: deep(30) })).r, 'ap2.depth');
      refused((await present(w, { closed: deep(9000) })).r, 'ap2.depth');
      refused((await present(w, { open: { extra: { note: '@' }, edit: deep(9000).edit } })).r, 'ap2.depth');
    });

    test('constraint types are own keys: constructor, __proto__ and toString are unknown types (422), never a 500', async () => {
      for (const type of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const r = (await present(w, { constraints: [{ type, max: 1 }] })).r;
        refused(r, 'ap2.constraints');
        assert.match(r.body.error.message, /unknown type/, type);
      }
    });

    test('a transaction_id is unique under its open mandate, not across the service: another mandate may use the same id', async () => {
      const tx = b64u(randomBytes(32));
      const agentKey = p256Key();
      const first = await present(w, { open: { agent: agentKey }, closed: { transactionId: tx } });
      assert.equal(first.r.status, 201, first.r.text);
      // Another open mandate (another tenant's, say): its id space is its own.
      const other = await present(w, { closed: { transactionId: tx } });
      assert.equal(other.r.status, 201, other.r.text);
      // The same open mandate again, with the same id: the payment was made.
      const again = (await present(w, { open: { agent: agentKey }, openToken: first.open, closed: { transactionId: tx } })).r;
      assert.match(expectError(again, 409, 'replayed'), /^ap2\.transaction_id: .*under this mandate/);
    });

    test('a budget is spent across escrows under one open mandate, and a refund gives it back', async () => {
      const agentKey = p256Key();
      const clock = await now(w.h);
      const open = openMandate({
        issuer: ISSUER,
        agent: agentKey,
        constraints: [{ type: 'payment.budget', currency: 'USD', max: 300 }],
        iat: clock - 10,
        exp: clock + 86_400,
      });
      const pay = async () => {
        const c = await challenge(w.h);
        const closed = closedMandate({
          agent: agentKey,
          open,
          aud: c.audience,
          nonce: c.nonce,
          payeeId: w.payee.publicKey,
          amount: 15_000,
          currency: 'USD',
        });
        return w.h.req('POST', '/v1/escrows', {
          amount: '150',
          asset: 'USD',
          terms: PASSING_TERMS,
          payerAgentId: w.payer.id,
          payeeAgentId: w.payee.id,
          ap2: { paymentMandate: chain(open, closed) },
        });
      };
      const a = await pay();
      assert.equal(a.status, 201, a.text);
      assert.equal((await pay()).status, 201);
      refused(await pay(), 'ap2.budget');
      assert.equal((await w.h.req('POST', `/v1/escrows/${a.body.id}/fund`)).status, 200);
      assert.equal((await w.h.req('POST', `/v1/escrows/${a.body.id}/refund`)).status, 200);
      const b = await pay();
      assert.equal(b.status, 201, 'the refunded 150 is back in the budget');
      refused(await pay(), 'ap2.budget');
      // A refund after release gives its amount back too (docs/protocol.md §24.4).
      assert.equal((await w.h.req('POST', `/v1/escrows/${b.body.id}/fund`)).status, 200);
      const d = await w.h.req('POST', `/v1/escrows/${b.body.id}/delivery`, { agentId: w.payee.id, payload: { title: 'done' } });
      assert.ok(d.body.proof, d.text);
      refused(await pay(), 'ap2.budget');
      const r = await w.h.req('POST', `/v1/escrows/${b.body.id}/refunds`, { amount: '150', agentIds: [w.payee.id] });
      assert.equal(r.status, 201, r.text);
      assert.equal((await pay()).status, 201, 'the 150 refunded after release is back in the budget');
    });

    test('the bundle carries the chain (kind ap2); verifyBundle re-verifies it offline against pinned AP2 issuers, and a tampered chain fails', async () => {
      const { r, chain: ch } = await present(w);
      assert.equal(r.status, 201, r.text);
      assert.equal((await w.h.req('POST', `/v1/escrows/${r.body.id}/fund`)).status, 200);
      const d = await w.h.req('POST', `/v1/escrows/${r.body.id}/delivery`, { agentId: w.payee.id, payload: { title: 'done' } });
      assert.equal(d.status, 201, d.text);
      assert.equal(d.body.proof.mandateHash, r.body.mandateHash);
      const bundle = (await w.h.req('GET', `/v1/proofs/${d.body.proof.id}/bundle`)).body as Bundle;
      const pinned = (await w.h.req('GET', '/.well-known/proof-issuer.json')).body.keys;
      const consent = bundle.parties!.signatures.find((s) => s.kind === 'ap2')!;
      assert.deepEqual(consent.signedBody, { paymentMandate: ch });
      assert.equal(consent.trailIndex, 0);
      const ok = verifyBundle(bundle, { trustedKeys: pinned, ap2Issuers: jwks(ISSUER) });
      assert.equal(ok.ok, true, JSON.stringify(ok.checks.filter((c) => !c.ok)));
      const check = (v: ReturnType<typeof verifyBundle>) => v.checks.find((c) => c.name.endsWith('.ap2'))!;
      // Nothing pinned: refused, saying how to pin.
      const unpinned = verifyBundle(bundle, { trustedKeys: pinned });
      assert.equal(unpinned.ok, false);
      assert.match(check(unpinned).detail, /--ap2-issuers/);
      // Another issuer under the same kid: the issuer signature fails.
      assert.match(check(verifyBundle(bundle, { trustedKeys: pinned, ap2Issuers: jwks(STRANGER) })).detail, /ap2\.signature/);
      const tampered = (edit: (c: string) => string) => {
        const copy = structuredClone(bundle);
        const s = copy.parties!.signatures.find((x) => x.kind === 'ap2')!;
        s.signedBody = { paymentMandate: edit(ch) };
        return check(verifyBundle(copy, { trustedKeys: pinned, ap2Issuers: jwks(ISSUER) }));
      };
      // The closed mandate's disclosure altered (another amount): its digest no longer matches.
      const [open, closed] = ch.split('~~');
      const [cjwt, cdisc] = closed.split('~');
      const claims = JSON.parse(Buffer.from(cdisc, 'base64url').toString());
      claims[1].payment_amount.amount = 1;
      const altered = tampered(() => `${open}~~${cjwt}~${b64u(JSON.stringify(claims))}~`);
      assert.equal(altered.ok, false);
      assert.match(altered.detail, /ap2\.disclosure/);
      // Another valid chain from the same issuer, for another payment: verifies, but is not this matter's.
      const other = await present(w);
      assert.equal(other.r.status, 201);
      const swapped = tampered(() => other.chain);
      assert.equal(swapped.ok, false);
      assert.match(swapped.detail, /mandateHash/);
      // The CLI: --ap2-issuers FILE pins them; without it the AP2 matter fails; a file that is no JWKS is a usage error.
      const dir = mkdtempSync(join(tmpdir(), 'ap2-cli-'));
      const file = (name: string, v: unknown) => {
        writeFileSync(join(dir, name), JSON.stringify(v));
        return join(dir, name);
      };
      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
      const args = ['verify', file('bundle.json', bundle), ...pinned.flatMap((k: { publicKey: string }) => ['--trusted-key', k.publicKey])];
      assert.equal(await cli([...args, '--ap2-issuers', file('jwks.json', jwks(ISSUER))], io), 0, lines.join('\n'));
      assert.equal(await cli(args, io), 1);
      assert.ok(lines.some((l) => /^FAIL parties\[\d+\]\.ap2: .*--ap2-issuers/.test(l)));
      assert.equal(await cli([...args, '--ap2-issuers', file('bad.json', { keys: [{ kty: 'OKP' }] })], io), 2);
      // Dropped: parties.complete fails.
      const copy = structuredClone(bundle);
      copy.parties!.signatures = copy.parties!.signatures.filter((x) => x.kind !== 'ap2');
      const gone = verifyBundle(copy, { trustedKeys: pinned, ap2Issuers: jwks(ISSUER) });
      assert.match(gone.checks.find((c) => c.name === 'parties.complete')!.detail, /no ap2 chain is carried/);
    });

    test('MCP create_escrow takes the same ap2 chain, verified the same way (a replayed nonce is the same 409)', async () => {
      const client = await connectHttp(w.h);
      try {
        const agentKey = p256Key();
        const open = openMandate({ issuer: ISSUER, agent: agentKey, constraints: [] });
        const c = await challenge(w.h);
        const closed = closedMandate({
          agent: agentKey,
          open,
          aud: c.audience,
          nonce: c.nonce,
          payeeId: w.payee.publicKey,
          amount: 700,
          currency: 'USD',
        });
        const args = {
          amount: '7',
          asset: 'USD',
          terms: PASSING_TERMS,
          payerAgentId: w.payer.id,
          payeeAgentId: w.payee.id,
          ap2: { paymentMandate: chain(open, closed) },
        };
        const e = await ok(client, 'create_escrow', args);
        assert.equal(e.mandateHash, sha256hex(closed));
        assert.match(await fails(client, 'create_escrow', args, 'replayed'), /^ap2\.nonce:/);
      } finally {
        await client.close();
      }
    });

    test("MCP: the official SDK client fetches an AP2 matter's bundle with get_bundle (kind ap2 in its output schema) and verify_bundle checks it with ap2Issuers", async () => {
      const { r } = await present(w);
      assert.equal(r.status, 201, r.text);
      assert.equal((await w.h.req('POST', `/v1/escrows/${r.body.id}/fund`)).status, 200);
      const d = await w.h.req('POST', `/v1/escrows/${r.body.id}/delivery`, { agentId: w.payee.id, payload: { title: 'done' } });
      assert.equal(d.status, 201, d.text);
      const pinned = (await w.h.req('GET', '/.well-known/proof-issuer.json')).body.keys.map((k: { publicKey: string }) => k.publicKey);
      const client = await connectHttp(w.h);
      try {
        // The Client checks structuredContent against get_bundle's outputSchema: a kind it does not list throws.
        const bundle = await ok(client, 'get_bundle', { proofId: d.body.proof.id });
        assert.ok(bundle.parties.signatures.some((s: { kind: string }) => s.kind === 'ap2'));
        const verified = await ok(client, 'verify_bundle', { bundle, trustedKeys: pinned, ap2Issuers: jwks(ISSUER) });
        assert.equal(verified.valid, true, JSON.stringify(verified.checks.filter((c: { ok: boolean }) => !c.ok)));
        const ap2Check = (v: { checks: Array<{ name: string; ok: boolean; detail: string }> }) =>
          v.checks.find((c) => c.name.endsWith('.ap2'))!;
        assert.equal(ap2Check(verified).ok, true);
        // Without the issuers the chain cannot be checked: not valid, and the detail names the argument.
        const unpinned = await ok(client, 'verify_bundle', { bundle, trustedKeys: pinned });
        assert.equal(unpinned.valid, false);
        assert.match(ap2Check(unpinned).detail, /ap2Issuers/);
        // Another issuer under the same kid: the chain's issuer signature fails.
        const stranger = await ok(client, 'verify_bundle', { bundle, trustedKeys: pinned, ap2Issuers: jwks(STRANGER) });
        assert.equal(stranger.valid, false);
        assert.match(ap2Check(stranger).detail, /ap2\.signature/);
        // Not a JWKS: the caller's mistake, 400 naming the argument.
        assert.match(
          await fails(client, 'verify_bundle', { bundle, trustedKeys: pinned, ap2Issuers: { keys: [{ kty: 'OKP' }] } }, 'bad_request'),
          /^ap2Issuers/,
        );
      } finally {
        await client.close();
      }
    });

    test('the AP2 Payment Receipt: ES256 by the key the issuer document lists, reference the closed hash in sd_hash form, Success or Error(refunded)', async () => {
      const doc = (await w.h.req('GET', '/.well-known/proof-issuer.json')).body;
      assert.equal(doc.ap2ReceiptKeys.length, 1);
      const published = doc.ap2ReceiptKeys[0];
      assert.equal(published.x, RECEIPT.jwk.x);
      assert.equal(published.y, RECEIPT.jwk.y);
      assert.equal(published.d, undefined);
      const verifyJwt = (jwt: string) => {
        const [hd, pl, sig] = jwt.split('.');
        const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: published.x, y: published.y }, format: 'jwk' });
        assert.equal(
          nodeVerify('sha256', Buffer.from(`${hd}.${pl}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig, 'base64url')),
          true,
        );
        const header = JSON.parse(Buffer.from(hd, 'base64url').toString());
        assert.deepEqual(header, { alg: 'ES256', typ: 'JWT', kid: published.kid });
        return JSON.parse(Buffer.from(pl, 'base64url').toString());
      };
      // Released.
      const paid = await present(w);
      assert.equal(paid.r.status, 201);
      const id = paid.r.body.id;
      expectError(await w.h.req('GET', `/v1/escrows/${id}/ap2-receipt`), 409, 'invalid_state');
      assert.equal((await w.h.req('POST', `/v1/escrows/${id}/fund`)).status, 200);
      const d = await w.h.req('POST', `/v1/escrows/${id}/delivery`, { agentId: w.payee.id, payload: { title: 'done' } });
      const ok1 = await w.h.req('GET', `/v1/escrows/${id}/ap2-receipt`);
      assert.equal(ok1.status, 200, ok1.text);
      const claims = verifyJwt(ok1.body.receipt);
      assert.deepEqual(claims, ok1.body.claims);
      assert.equal(ok1.body.kid, published.kid);
      assert.equal(claims.status, 'Success');
      assert.equal(claims.reference, sdHash(paid.closed));
      assert.equal(claims.payment_id, id);
      assert.equal(claims.psp_confirmation_id, d.body.proof.id);
      assert.equal(typeof claims.network_confirmation_id, 'string');
      assert.equal(claims.iss, PISP.domain_name);
      assert.equal(claims.iat, Math.floor(Date.parse(d.body.proof.issuedAt) / 1000));
      assert.equal((await w.h.req('GET', `/v1/escrows/${id}/ap2-receipt`)).body.receipt, ok1.body.receipt, 'the same receipt each time');
      // Refunded.
      const back = await present(w);
      const rid = back.r.body.id;
      assert.equal((await w.h.req('POST', `/v1/escrows/${rid}/fund`)).status, 200);
      assert.equal((await w.h.req('POST', `/v1/escrows/${rid}/refund`)).status, 200);
      const refunded = verifyJwt((await w.h.req('GET', `/v1/escrows/${rid}/ap2-receipt`)).body.receipt);
      assert.equal(refunded.status, 'Error');
      assert.equal(refunded.error, 'refunded');
      assert.equal(typeof refunded.error_description, 'string');
      assert.equal(refunded.psp_confirmation_id, undefined);
      // An escrow under no AP2 mandate has none.
      const plain = await w.h.req('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USD',
        terms: PASSING_TERMS,
        payerAgentId: w.payer.id,
        payeeAgentId: w.payee.id,
      });
      assert.match(
        expectError(await w.h.req('GET', `/v1/escrows/${plain.body.id}/ap2-receipt`), 404, 'not_found'),
        /not created under an AP2/,
      );
    });

    test('10 concurrent escrows under a budget that allows 5: exactly 5 are created, the rest refused naming ap2.budget', async () => {
      const agentKey = p256Key();
      const clock = await now(w.h);
      const open = openMandate({
        issuer: ISSUER,
        agent: agentKey,
        constraints: [{ type: 'payment.budget', currency: 'USD', max: 50 }],
        iat: clock - 10,
        exp: clock + 86_400,
      });
      const nonces = [];
      for (let i = 0; i < 10; i++) nonces.push((await challenge(w.h)).nonce);
      const results = await Promise.all(
        nonces.map((nonce) =>
          w.h.req('POST', '/v1/escrows', {
            amount: '10',
            asset: 'USD',
            terms: PASSING_TERMS,
            payerAgentId: w.payer.id,
            payeeAgentId: w.payee.id,
            ap2: {
              paymentMandate: chain(
                open,
                closedMandate({
                  agent: agentKey,
                  open,
                  aud: 'https://escrow.example',
                  nonce,
                  payeeId: w.payee.publicKey,
                  amount: 1000,
                  currency: 'USD',
                }),
              ),
            },
          }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 201).length, 5, results.map((r) => r.status).join(','));
      for (const r of results.filter((x) => x.status !== 201)) refused(r, 'ap2.budget');
      const [row] = await w.h.db.query('SELECT spent::text AS spent, occurrences FROM ap2_mandates WHERE spent = 50000000');
      assert.equal(Number(row.occurrences), 5);
    });

    test('recurrence on the service clock: MONTHLY waits a calendar month, max_occurrences counts every acceptance', async () => {
      const agentKey = p256Key();
      const clock = await now(w.h);
      const open = openMandate({
        issuer: ISSUER,
        agent: agentKey,
        constraints: [
          { type: 'payment.amount_range', currency: 'USD', max: 1000 },
          { type: 'payment.budget', currency: 'USD', max: 100 },
          { type: 'payment.agent_recurrence', frequency: 'MONTHLY', max_occurrences: 2 },
        ],
        iat: clock - 10,
        exp: clock + 400 * 86_400,
      });
      const pay = async () => {
        const c = await challenge(w.h);
        const closed = closedMandate({
          agent: agentKey,
          open,
          aud: c.audience,
          nonce: c.nonce,
          payeeId: w.payee.publicKey,
          amount: 1000,
          currency: 'USD',
          iat: await now(w.h),
        });
        return w.h.req('POST', '/v1/escrows', {
          amount: '10',
          asset: 'USD',
          terms: PASSING_TERMS,
          payerAgentId: w.payer.id,
          payeeAgentId: w.payee.id,
          ap2: { paymentMandate: chain(open, closed) },
        });
      };
      const advance = async (days: number) =>
        assert.equal((await w.h.req('POST', '/v1/sandbox/clock', { advanceSeconds: days * 86_400 })).status, 200);
      const first = await pay();
      assert.equal(first.status, 201, first.text);
      const firstAt = Date.parse(first.body.createdAt);
      refused(await pay(), 'ap2.agent_recurrence');
      await advance(27); // no calendar month is 27 days long
      refused(await pay(), 'ap2.agent_recurrence');
      await advance(5); // 32 days: past one calendar month from any date
      const second = await pay();
      assert.equal(second.status, 201, second.text);
      assert.ok(Date.parse(second.body.createdAt) - firstAt >= 32 * 86_400_000);
      await advance(40);
      const third = await pay();
      refused(third, 'ap2.agent_recurrence');
      assert.match(third.body.error.message, /occurrences are used up/);
    });
  });
}

describe('AP2 off', () => {
  test('without AP2_ISSUERS the challenge and the ap2 field are 400 naming the variable', async () => {
    const h = await makeHarness('pglite');
    try {
      assert.match(expectError(await h.req('POST', '/v1/ap2/challenge'), 400, 'bad_request'), /AP2_ISSUERS/);
      const payer = await agent(h);
      const payee = await agent(h);
      const r = await h.req('POST', '/v1/escrows', {
        amount: '1',
        asset: 'USD',
        terms: PASSING_TERMS,
        payerAgentId: payer.id,
        payeeAgentId: payee.id,
        ap2: { paymentMandate: 'x~~y~' },
      });
      assert.match(expectError(r, 400, 'bad_request'), /AP2_ISSUERS/);
    } finally {
      await h.close();
    }
  });
});
