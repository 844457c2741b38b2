// The x402 demo against the official SDKs: @x402/core (v2) pays it end to end; x402 (v1) is asked and refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { x402Client } from '@x402/core/client';
import { decodePaymentSignatureHeader, encodePaymentSignatureHeader, x402HTTPClient } from '@x402/core/http';
import { PaymentPayloadV2Schema, PaymentRequiredV1Schema, PaymentRequiredV2Schema } from '@x402/core/schemas';
import { describeStores } from '../harness.ts';
import { importChainTool, needsChainTools } from '../chain/tools.ts';
import {
  createPaymentHeader,
  createPaymentV2,
  generateKeys,
  proofSandboxScheme,
  verifyBundle,
  X402_NETWORK_V2,
  type Bundle,
  type IssuerKey,
} from '@escrow-settlement/client';
import { counts, DEMO, expectRefusal, pay, requiredV2 } from './helpers.ts';

// x402 v1 (the `x402` package) pulls a whole wallet stack, so it is chain tooling (test/chain/tools.ts):
// its tests skip without it. The shapes below are what these tests use of it.
type Parsed = { success: boolean; error?: { issues: Array<{ path: Array<string | number> }> } };
type Schema = { safeParse(value: unknown): Parsed };
const V1 = needsChainTools('x402');
const v1 = V1.skip
  ? undefined
  : {
      ...(await importChainTool<{
        x402ResponseSchema: Schema;
        PaymentRequirementsSchema: Schema;
        settleResponseFromHeader(h: string): { success: boolean; network: string; payer: string; transaction: string };
      }>('x402/types')),
      ...(await importChainTool<{ createPaymentHeader(client: never, version: number, requirements: unknown): Promise<string> }>(
        'x402/client',
      )),
    };

const PUBLIC_URL = 'https://escrow.example.com';
const RESOURCE = `${PUBLIC_URL}${DEMO}`;

/** The official v2 HTTP client with this service's scheme registered for its network. */
function officialClient(secretKey: string) {
  // As a payer using the official SDK writes it. USDC on a network @x402/core does not know is not one of its default assets: allow it explicitly.
  return new x402HTTPClient(new x402Client().register(X402_NETWORK_V2, proofSandboxScheme(secretKey)).setSpendControls(false));
}

describeStores(
  'x402 v2 with @x402/core',
  (h) => {
    test('the official v2 client reads PAYMENT-REQUIRED, pays with PAYMENT-SIGNATURE and reads PAYMENT-RESPONSE', async () => {
      const http = officialClient(generateKeys().secretKey);
      const unpaid = await h().req('GET', DEMO);
      const required = http.getPaymentRequiredResponse((name) => unpaid.headers.get(name), unpaid.body);
      assert.equal(required.x402Version, 2, 'the SDK takes the header, not the v1 body');
      PaymentRequiredV2Schema.parse(required);
      assert.deepEqual(required.resource, { url: RESOURCE, description: unpaid.body.accepts[0].description, mimeType: 'application/json' });
      assert.equal(required.accepts[0].network, 'proof:local');
      assert.equal(required.accepts[0].amount, '10000', '0.01 USDC in atomic units (6 decimals)');

      const payload = await http.createPaymentPayload(required);
      PaymentPayloadV2Schema.parse(payload);
      assert.deepEqual(payload.accepted, required.accepts[0], 'accepted carries the chosen requirements verbatim');
      const headers = http.encodePaymentSignatureHeader(payload);
      assert.deepEqual(Object.keys(headers), ['PAYMENT-SIGNATURE']);

      const before = await counts(h());
      const paid = await h().req('GET', DEMO, undefined, headers);
      assert.equal(paid.status, 200, paid.text);
      const settled = http.getPaymentSettleResponse((name) => paid.headers.get(name));
      const payer = (payload.payload as any).authorization.from;
      assert.equal(settled.success, true);
      assert.equal(settled.network, 'proof:local');
      assert.equal(settled.payer, payer);
      assert.match(settled.transaction, /^prf_/);
      assert.equal(
        http.parsePaymentResult({ status: 200, getHeader: (n) => paid.headers.get(n), body: paid.body }).paymentStatus,
        'settled',
      );
      assert.deepEqual(await counts(h()), {
        ...before,
        escrows: before.escrows + 1,
        proofs: before.proofs + 1,
        nonces: before.nonces + 1,
        log: before.log + 1,
      });

      // The settlement proof is real and its bundle carries the payer's authorization.
      const bundle = (await h().req('GET', `/v1/proofs/${settled.transaction}/bundle`)).body as Bundle;
      const pinned = (await h().req('GET', '/.well-known/proof-issuer.json')).body.keys as IssuerKey[];
      const result = verifyBundle(bundle, { trustedKeys: pinned });
      assert.equal(result.ok, true, JSON.stringify(result.checks.filter((c) => !c.ok)));
      const x = bundle.parties!.signatures.filter((s) => s.kind === 'x402');
      assert.equal(x.length, 1);
      assert.deepEqual(x[0].signedBody, (payload.payload as any).authorization);
    });

    test('our own v2 helper builds what the official schema and decoder accept', async () => {
      const required = requiredV2(await h().req('GET', DEMO));
      const payment = createPaymentV2(required, generateKeys().secretKey);
      const header = encodePaymentSignatureHeader(payment as never);
      assert.deepEqual(PaymentPayloadV2Schema.parse(decodePaymentSignatureHeader(header)), payment);
      assert.equal((await pay(h(), header, 'PAYMENT-SIGNATURE')).status, 200);
    });

    // One row per field of `accepted` (or the resource) a v2 payment gets wrong, signed properly otherwise.
    const ROWS: Array<[string, string, (p: any) => void, RegExp]> = [
      ['accepted.network', 'scheme_mismatch', (p) => (p.accepted.network = 'eip155:84532'), /accepted\.network is "eip155:84532"/],
      ['accepted.scheme', 'scheme_mismatch', (p) => (p.accepted.scheme = 'exact'), /accepted\.scheme is "exact"/],
      [
        'resource.url',
        'wrong_resource',
        (p) => (p.resource.url = 'https://evil.example/v1/x402/demo'),
        /resource\.url is https:\/\/evil\.example/,
      ],
      [
        'accepted.extra.resource',
        'wrong_resource',
        (p) => (p.accepted.extra.resource = 'https://evil.example/v1/x402/demo'),
        /accepted\.extra\.resource/,
      ],
      ['accepted.payTo', 'wrong_payee', (p) => (p.accepted.payTo = generateKeys().publicKey), /accepted\.payTo/],
      ['accepted.asset', 'wrong_asset', (p) => (p.accepted.asset = 'EURC'), /accepted\.asset is "EURC"/],
      ['accepted.amount', 'payment_invalid', (p) => (p.accepted.amount = '1'), /accepted\.amount is "1"/],
      ['accepted.maxTimeoutSeconds', 'payment_invalid', (p) => (p.accepted.maxTimeoutSeconds = 600), /accepted\.maxTimeoutSeconds/],
      ['accepted without extra', 'malformed_header', (p) => delete p.accepted.extra, /payment\.accepted\.extra is required/],
      ['an unknown top-level field', 'malformed_header', (p) => (p.memo = 'hi'), /payment\.memo is not a known field/],
    ];
    for (const [field, code, change, message] of ROWS) {
      test(`a v2 payment whose ${field} disagrees with the offer is 402 ${code}`, async () => {
        const required = requiredV2(await h().req('GET', DEMO));
        const payment: any = createPaymentV2(required, generateKeys().secretKey);
        change(payment);
        const before = await counts(h());
        const r = await pay(h(), encodePaymentSignatureHeader(payment), 'PAYMENT-SIGNATURE');
        assert.match(expectRefusal(r, code), message);
        assert.deepEqual(await counts(h()), before);
      });
    }

    test('a v2 payment in X-PAYMENT is version_mismatch: the SDKs send v2 only in PAYMENT-SIGNATURE', async () => {
      const payment = createPaymentV2(requiredV2(await h().req('GET', DEMO)), generateKeys().secretKey);
      expectRefusal(await pay(h(), encodePaymentSignatureHeader(payment as never)), 'version_mismatch');
    });
  },
  { PUBLIC_URL },
);

describeStores(
  'x402 resource from PUBLIC_URL, never from Host',
  (h) => {
    test('whatever Host the request names, the offer names PUBLIC_URL, and a payment signed for the other host is wrong_resource', async () => {
      const at = (host: string, headers: Record<string, string> = {}) =>
        h().app.fetch(new Request(`http://${host}${DEMO}`, { headers }), { ip: '127.0.0.1' });
      const evil = await at('evil.example');
      assert.equal(evil.status, 402);
      const body = await evil.json();
      assert.equal(body.accepts[0].resource, RESOURCE);
      // A client that trusted the Host it was reached at would sign the evil URL: that payment is refused.
      const forged = { ...body.accepts[0], resource: `http://evil.example${DEMO}` };
      const paid = await at('evil.example', { 'X-PAYMENT': createPaymentHeader(forged, generateKeys().secretKey) });
      assert.equal(paid.status, 402);
      const refusal = await paid.json();
      assert.equal(refusal.error.code, 'wrong_resource');
      assert.match(refusal.error.message, /this resource is https:\/\/escrow\.example\.com\/v1\/x402\/demo/);
    });
  },
  { PUBLIC_URL },
);

describeStores(
  'x402 v1 official packages against the v1 402 body',
  (h) => {
    test(
      'the x402 v1 package refuses the body: its error must be a string reason, and it knows only scheme exact on EVM/SVM networks',
      V1,
      async () => {
        const { x402ResponseSchema, PaymentRequirementsSchema: V1RequirementsSchema, createPaymentHeader: v1CreatePaymentHeader } = v1!;
        const r = await h().req('GET', DEMO);
        const parsed = x402ResponseSchema.safeParse(r.body);
        assert.equal(parsed.success, false);
        const paths = parsed.error!.issues.map((i) => i.path.join('.'));
        assert.ok(paths.includes('error'), `the service's error envelope is refused: ${paths.join(', ')}`);
        // Without the envelope the requirements are still refused: this scheme and network are not in its closed lists.
        const withoutError = x402ResponseSchema.safeParse({ ...r.body, error: undefined });
        assert.equal(withoutError.success, false);
        const reqPaths = V1RequirementsSchema.safeParse(r.body.accepts[0]).error!.issues.map((i) => i.path.join('.'));
        for (const f of ['scheme', 'network', 'payTo']) assert.ok(reqPaths.includes(f), `${f}: ${reqPaths.join(', ')}`);
        // And its client cannot sign for them at all.
        await assert.rejects(v1CreatePaymentHeader({} as never, 1, r.body.accepts[0]), /Unsupported scheme|Unsupported network/);
      },
    );

    test("@x402/core's v1 schema disagrees with the body only on the error envelope", async () => {
      const r = await h().req('GET', DEMO);
      const parsed = PaymentRequiredV1Schema.safeParse(r.body);
      assert.equal(parsed.success, false);
      assert.deepEqual(
        parsed.error!.issues.map((i) => i.path.join('.')),
        ['error'],
      );
      assert.equal(PaymentRequiredV1Schema.safeParse({ ...r.body, error: r.body.error.code }).success, true);
    });

    test('X-PAYMENT-RESPONSE decodes with the v1 package and names the settlement', V1, async () => {
      const { settleResponseFromHeader } = v1!;
      const offer = (await h().req('GET', DEMO)).body.accepts[0];
      const payer = generateKeys();
      const r = await pay(h(), createPaymentHeader(offer, payer.secretKey));
      assert.equal(r.status, 200, r.text);
      const settled = settleResponseFromHeader(r.headers.get('x-payment-response')!);
      assert.deepEqual(
        { success: settled.success, network: settled.network, payer: settled.payer },
        { success: true, network: 'proof-local', payer: payer.publicKey },
      );
      assert.match(settled.transaction, /^prf_/);
    });
  },
  { PUBLIC_URL },
);
