// The x402 demo takes exactly its price, for a short while: a value above the price is refused (not
// kept as a tip), and validBefore may be at most maxTimeoutSeconds ahead (docs/security.md "x402 demo").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeStores } from '../harness.ts';
import { createPaymentHeader, generateKeys } from '@escrow-settlement/client';
import { counts, DEMO, expectRefusal, offer } from './helpers.ts';

const x = (header: string) => ({ 'X-PAYMENT': header });

describeStores('x402 demo bounds', (h) => {
  const refused: Array<[string, (o: Awaited<ReturnType<typeof offer>>) => Record<string, string>, RegExp]> = [
    [
      'one micro-unit above the price',
      (o) => x(createPaymentHeader(o, generateKeys().secretKey, { value: '0.010001' })),
      /above the price 0\.01 USDC.*overpayment is refused/,
    ],
    [
      'a thousand times the price',
      (o) => x(createPaymentHeader(o, generateKeys().secretKey, { value: '10' })),
      /authorization\.value 10 is above the price/,
    ],
    [
      'validBefore in year 9999',
      (o) => x(createPaymentHeader(o, generateKeys().secretKey, { validBefore: '9999-12-31T23:59:59.000Z' })),
      /validBefore 9999-12-31T23:59:59\.000Z is more than maxTimeoutSeconds \(60 s\)/,
    ],
    [
      'validBefore two minutes ahead',
      (o) => x(createPaymentHeader(o, generateKeys().secretKey, { validBefore: new Date(Date.now() + 120_000).toISOString() })),
      /more than maxTimeoutSeconds/,
    ],
  ];
  for (const [what, build, names] of refused) {
    test(`refused with payment_invalid, nothing settled: ${what}`, async () => {
      const o = await offer(h());
      const before = await counts(h());
      const r = await h().req('GET', DEMO, undefined, build(o));
      assert.match(expectRefusal(r, 'payment_invalid'), names);
      assert.deepEqual(await counts(h()), before);
    });
  }

  test('exactly the price, valid for maxTimeoutSeconds (as the client helper signs it), settles', async () => {
    const o = await offer(h());
    const r = await h().req('GET', DEMO, undefined, x(createPaymentHeader(o, generateKeys().secretKey)));
    assert.equal(r.status, 200, r.text);
    const r2 = await h().req(
      'GET',
      DEMO,
      undefined,
      x(createPaymentHeader(o, generateKeys().secretKey, { validBefore: new Date(Date.now() + 30_000).toISOString() })),
    );
    assert.equal(r2.status, 200, r2.text);
  });
});
