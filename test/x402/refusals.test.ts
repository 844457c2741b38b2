import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores } from '../harness.ts';
import {
  createPaymentHeader,
  decodePaymentHeader,
  encodeBase64Json,
  encodePaymentHeader,
  generateKeys,
  signAuthorization,
  type KeyPairHex,
  type PaymentPayload,
  type PaymentRequirements,
  X402_PAYMENT_REFUSALS,
} from '@escrow-settlement/client';
import { counts, DEMO, expectRefusal, offer } from './helpers.ts';

/** Decode a header the client module built, change it, encode it again. */
function tamper(header: string, change: (p: PaymentPayload & Record<string, any>) => void): string {
  const p = decodePaymentHeader(header) as PaymentPayload & Record<string, any>;
  change(p);
  return encodePaymentHeader(p);
}

/** Change the authorization and sign it again with the payer's key, so only the changed field disagrees. */
const resigned = (header: string, payer: KeyPairHex, change: (a: Record<string, any>) => void) =>
  tamper(header, (p) => {
    change(p.payload.authorization);
    p.payload.signature = signAuthorization(payer.secretKey, p.payload.authorization);
  });

type Build = (offer: PaymentRequirements, payer: KeyPairHex) => Record<string, string>;
const x = (header: string) => ({ 'X-PAYMENT': header });
const good = (o: PaymentRequirements, payer: KeyPairHex) => createPaymentHeader(o, payer.secretKey);

// One row per refusal: what the header gets wrong, the code it must earn, and what the message names.
const ROWS: Array<[string, string, Build, RegExp]> = [
  ['a header that is not base64', 'malformed_header', () => x('%%% not base64 %%%'), /base64/],
  ['base64 of text that is not JSON', 'malformed_header', () => x(btoa('x402 please')), /JSON/],
  ['an empty header', 'malformed_header', () => x(''), /X-PAYMENT must be 1 to/],
  ['a JSON array instead of the payload object', 'malformed_header', () => x(encodeBase64Json([1])), /payment must be a JSON object/],
  [
    'a payload without its signature',
    'malformed_header',
    (o, p) => x(tamper(good(o, p), (q) => delete (q.payload as any).signature)),
    /payment\.payload\.signature is required/,
  ],
  [
    'an unknown field in the authorization',
    'malformed_header',
    (o, p) => x(tamper(good(o, p), (q) => ((q.payload.authorization as any).memo = 'hi'))),
    /authorization\.memo is not a known field/,
  ],
  [
    'a nonce that is not 64 hex characters',
    'malformed_header',
    (o, p) => x(createPaymentHeader(o, p.secretKey, { nonce: 'abc' })),
    /nonce must be 64 lowercase hex/,
  ],
  [
    'a value that is not an amount',
    'malformed_header',
    (o, p) => x(createPaymentHeader(o, p.secretKey, { value: '1e3' })),
    /value must be a decimal string/,
  ],
  [
    'a string x402Version',
    'malformed_header',
    (o, p) => x(tamper(good(o, p), (q) => ((q as any).x402Version = '1'))),
    /with an integer x402Version/,
  ],
  [
    'both X-PAYMENT and PAYMENT-SIGNATURE',
    'malformed_header',
    (o, p) => ({ 'X-PAYMENT': good(o, p), 'PAYMENT-SIGNATURE': good(o, p) }),
    /not both/,
  ],
  [
    'x402Version 2 under the v1 header name',
    'version_mismatch',
    (o, p) => x(tamper(good(o, p), (q) => (q.x402Version = 2))),
    /X-PAYMENT carries x402Version 1, not 2; send x402Version 2 in PAYMENT-SIGNATURE/,
  ],
  [
    'a v1 payment under the v2 header name',
    'version_mismatch',
    (o, p) => ({ 'PAYMENT-SIGNATURE': good(o, p) }),
    /PAYMENT-SIGNATURE carries x402Version 2, not 1; send x402Version 1 in X-PAYMENT/,
  ],
  ['x402Version 3', 'version_mismatch', (o, p) => x(tamper(good(o, p), (q) => (q.x402Version = 3))), /only versions 1 and 2 exist/],
  [
    'a lone surrogate in the authorization',
    'malformed_header',
    (o, p) => x(tamper(good(o, p), (q) => (q.payload.authorization.asset = 'US\uD800'))),
    /surrogate|canonical/i,
  ],
  ['another scheme', 'scheme_mismatch', (o, p) => x(createPaymentHeader({ ...o, scheme: 'exact' }, p.secretKey)), /scheme is "exact"/],
  ['another network', 'scheme_mismatch', (o, p) => x(tamper(good(o, p), (q) => (q.network = 'base-sepolia'))), /network is "base-sepolia"/],
  [
    'a signed authorization for another resource',
    'wrong_resource',
    (o, p) => x(createPaymentHeader({ ...o, resource: 'http://test.local/v1/x402/other' }, p.secretKey)),
    /this resource is https:\/\/escrow\.example\.com\/v1\/x402\/demo/,
  ],
  [
    'the resource changed after signing',
    'wrong_resource',
    (o, p) => x(tamper(good(o, p), (q) => (q.payload.authorization.resource = 'https://elsewhere.example/'))),
    /authorization\.resource/,
  ],
  [
    'payment to another payee',
    'wrong_payee',
    (o, p) => x(createPaymentHeader({ ...o, payTo: generateKeys().publicKey }, p.secretKey)),
    /payTo/,
  ],
  ['payment in another asset', 'wrong_asset', (o, p) => x(createPaymentHeader({ ...o, asset: 'EURC' }, p.secretKey)), /asset is "EURC"/],
  [
    'the value raised after signing',
    'bad_signature',
    (o, p) => x(tamper(good(o, p), (q) => (q.payload.authorization.value = '100'))),
    /does not verify/,
  ],
  [
    'an authorization signed by a key other than from',
    'bad_signature',
    (o, p) => x(tamper(good(o, p), (q) => (q.payload.authorization.from = generateKeys().publicKey))),
    /authorization\.from/,
  ],
  ['a signature that is not hex', 'bad_signature', (o, p) => x(tamper(good(o, p), (q) => (q.payload.signature = 'zz'))), /does not verify/],
  [
    'a value below the price',
    'payment_invalid',
    (o, p) => x(createPaymentHeader(o, p.secretKey, { value: '0.009999' })),
    /below the price 0\.01 USDC/,
  ],
  [
    'a validBefore in the past',
    'payment_invalid',
    (o, p) => x(createPaymentHeader(o, p.secretKey, { validBefore: new Date(Date.now() - 1000).toISOString() })),
    /validBefore .* has passed/,
  ],
  [
    'a validBefore pushed out after signing',
    'bad_signature',
    (o, p) => x(tamper(good(o, p), (q) => (q.payload.authorization.validBefore = '2999-01-01T00:00:00Z'))),
    /does not verify/,
  ],
];

describeStores(
  'x402 refusals',
  (h) => {
    for (const [what, code, build, names] of ROWS) {
      test(`${what} is refused with 402 ${code}, restating the offer and settling nothing`, async () => {
        const o = await offer(h());
        const before = await counts(h());
        const r = await h().req('GET', DEMO, undefined, build(o, generateKeys()));
        assert.match(expectRefusal(r, code), names);
        assert.deepEqual(r.body.accepts[0], o);
        assert.deepEqual(await counts(h()), before);
      });
    }

    test('each x402 code is covered by a row above', () => {
      const codes = new Set(ROWS.map((r) => r[1]));
      for (const c of X402_PAYMENT_REFUSALS) {
        assert.ok(codes.has(c), c);
      }
    });

    test('a payment re-signed after a change is judged on that change alone', async () => {
      const o = await offer(h());
      const payer = generateKeys();
      const r = await h().req('GET', DEMO, undefined, x(resigned(good(o, payer), payer, (a) => (a.asset = 'EURC'))));
      expectRefusal(r, 'wrong_asset');
    });

    test('the docs page lists every x402 code with its cause and fix', async () => {
      const page = (await h().req('GET', '/docs/errors')).text;
      for (const c of ['payment_required', ...X402_PAYMENT_REFUSALS]) {
        assert.match(page, new RegExp(`<tr id="${c}"><td><code>${c}</code></td><td>402</td><td>[^<]`));
      }
    });
  },
  { PUBLIC_URL: 'https://escrow.example.com/' },
);
