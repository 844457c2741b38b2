// The auth-capture scheme classes on their own (no network): prices, requirements, what they refuse
// to sign; and X402_NETWORK, which names the facilitator's network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config.ts';
import { ConfigError } from '../../src/errors.ts';
import { makeHarness } from '../harness.ts';
import { generateKeys, type Terms } from '@escrow-settlement/client';
import { AuthCaptureClient, AuthCaptureServer, signCollect, termsHash } from '@escrow-settlement/client/x402/authCapture';

const TERMS: Terms = { description: 'a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const kind = { x402Version: 2, scheme: 'auth-capture', network: 'escrow:sandbox' as const };

test('AuthCaptureServer: prices in atomic units, terms and timeouts into extra, and no requirements without terms', async () => {
  const payee = generateKeys();
  const server = new AuthCaptureServer({ payeeSecretKey: payee.secretKey, timeouts: { resolveWithinSeconds: 60 } });
  assert.deepEqual(await server.parsePrice('$0.01', 'escrow:sandbox'), { amount: '10000', asset: 'USDC' });
  assert.deepEqual(await server.parsePrice('2.5', 'escrow:sandbox'), { amount: '2500000', asset: 'USDC' });
  assert.deepEqual(await server.parsePrice(0.000001, 'escrow:sandbox'), { amount: '1', asset: 'USDC' });
  assert.deepEqual(await server.parsePrice({ amount: '7', asset: 'USDC' }, 'escrow:sandbox'), { amount: '7', asset: 'USDC' });
  await assert.rejects(server.parsePrice('0.0000001', 'escrow:sandbox'), /at most 6 fraction digits/);
  const option = server.option({ price: '$1', terms: TERMS, maxTimeoutSeconds: 30 });
  assert.deepEqual(option, {
    scheme: 'auth-capture',
    network: 'escrow:sandbox',
    payTo: payee.publicKey,
    price: '$1',
    maxTimeoutSeconds: 30,
    extra: { terms: TERMS, timeouts: { resolveWithinSeconds: 60 } },
  });
  assert.throws(() => server.option({ price: '$1' }), /needs terms/);
  const base = {
    scheme: 'auth-capture',
    network: 'escrow:sandbox' as const,
    amount: '1',
    asset: 'USDC',
    payTo: payee.publicKey,
    maxTimeoutSeconds: 30,
    extra: {},
  };
  await assert.rejects(server.enhancePaymentRequirements(base, kind, []), /needs terms/);
  const withTerms = new AuthCaptureServer({ payeeSecretKey: payee.secretKey, terms: TERMS, arbiter: generateKeys().publicKey });
  const enhanced = await withTerms.enhancePaymentRequirements(base, kind, []);
  assert.deepEqual(enhanced.extra.terms, TERMS);
  assert.match(enhanced.extra.arbiter as string, /^[0-9a-f]{64}$/);
  assert.throws(() => new AuthCaptureServer({ payeeSecretKey: 'nope' }), /payeeSecretKey/);
});

test('AuthCaptureClient: signs the collect binding resource and terms; refuses offers without terms, the escrow flow, or over the cap', async () => {
  const payer = generateKeys();
  const payTo = generateKeys().publicKey;
  const client = new AuthCaptureClient(payer.secretKey, { acceptTerms: (t) => termsHash(t) === termsHash(TERMS) });
  const requirements = {
    scheme: 'auth-capture',
    network: 'escrow:sandbox' as const,
    amount: '10000',
    asset: 'USDC',
    payTo,
    maxTimeoutSeconds: 60,
    extra: { paymentFlow: 'escrow', terms: TERMS, resource: 'https://r.example/x' },
  };
  const { payload } = await client.createPaymentPayload(2, requirements);
  const a = (payload as any).authorization;
  assert.equal(a.from, payer.publicKey);
  assert.equal(a.to, payTo);
  assert.equal(a.value, '10000');
  assert.equal(a.resource, 'https://r.example/x');
  assert.equal(a.termsHash, termsHash(TERMS));
  assert.ok(Date.parse(a.validBefore) <= Date.now() + 60_000);
  await assert.rejects(client.createPaymentPayload(2, { ...requirements, extra: { paymentFlow: 'escrow', resource: 'x' } }), /extra.terms/);
  await assert.rejects(
    client.createPaymentPayload(2, { ...requirements, extra: { ...requirements.extra, paymentFlow: 'authorization' } }),
    /paymentFlow/,
  );
  await assert.rejects(
    client.createPaymentPayload(2, { ...requirements, extra: { ...requirements.extra, terms: { description: 'other', checks: [] } } }),
    /acceptTerms/,
  );
  await assert.rejects(client.createPaymentPayload(2, requirements, { maxAmountPerPayment: '9999' }), /spend cap/);
  const { resource: _, ...noResource } = requirements.extra;
  await assert.rejects(client.createPaymentPayload(2, { ...requirements, extra: noResource }), /resource URL is unknown/);
  assert.deepEqual(client.findDefaultAsset('USDC', 'escrow:sandbox'), { asset: 'USDC', decimals: 6, symbol: 'USDC' });
  assert.equal(client.findDefaultAsset('USDC', 'eip155:8453'), undefined);
});

test('X402_NETWORK: escrow:sandbox by default, another escrow: network when set, anything else stops start-up naming it', async () => {
  assert.equal(parseConfig({ DATA_DIR: ':memory:' }).x402Network, 'escrow:sandbox');
  assert.equal(parseConfig({ DATA_DIR: ':memory:', X402_NETWORK: 'escrow:prod-1' }).x402Network, 'escrow:prod-1');
  for (const bad of ['eip155:8453', 'escrow:', 'escrow:a b', `escrow:${'x'.repeat(33)}`]) {
    assert.throws(
      () => parseConfig({ DATA_DIR: ':memory:', X402_NETWORK: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'X402_NETWORK',
    );
  }
  const h = await makeHarness('pglite', { X402_NETWORK: 'escrow:prod-1' });
  try {
    assert.equal((await h.req('GET', '/v1/x402/facilitator/supported')).body.kinds[0].network, 'escrow:prod-1');
    const payer = generateKeys();
    const payTo = generateKeys().publicKey;
    const req = {
      scheme: 'auth-capture',
      network: 'escrow:sandbox',
      asset: 'USDC',
      amount: '1',
      payTo,
      maxTimeoutSeconds: 60,
      extra: { paymentFlow: 'escrow', terms: TERMS },
    };
    const payload = signCollect(payer.secretKey, {
      to: payTo,
      value: '1',
      asset: 'USDC',
      resource: 'https://r.example/',
      terms: TERMS,
      maxTimeoutSeconds: 60,
    });
    const r = await h.req('POST', '/v1/x402/facilitator/verify', {
      x402Version: 2,
      paymentPayload: { x402Version: 2, resource: { url: 'https://r.example/' }, accepted: req, payload },
      paymentRequirements: req,
    });
    assert.equal(r.body.invalidReason, 'scheme_mismatch', r.text);
    const onProd = { ...req, network: 'escrow:prod-1' };
    const ok = await h.req('POST', '/v1/x402/facilitator/verify', {
      x402Version: 2,
      paymentPayload: { x402Version: 2, resource: { url: 'https://r.example/' }, accepted: onProd, payload },
      paymentRequirements: onProd,
    });
    assert.equal(ok.body.isValid, true, ok.text);
  } finally {
    await h.close();
  }
});
