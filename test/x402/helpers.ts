// Shared steps of the x402 tests: read the offer, pay it, and count what the database kept.
import assert from 'node:assert/strict';
import type { Harness, Res } from '../harness.ts';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import type { PaymentRequired, PaymentRequiredV2, PaymentRequirements } from '@escrow-settlement/client';

export const DEMO = '/v1/x402/demo';

/** GET the demo without payment; asserts the 402 and returns the offer. */
export async function offer(h: Harness, headers: Record<string, string> = {}): Promise<PaymentRequirements> {
  const r = await h.req('GET', DEMO, undefined, headers);
  assert.equal(r.status, 402, r.text);
  return (r.body as PaymentRequired).accepts[0];
}

export const pay = (h: Harness, header: string, name = 'X-PAYMENT', extra: Record<string, string> = {}) =>
  h.req('GET', DEMO, undefined, { [name]: header, ...extra });

/**
 * Asserts an x402 refusal: 402, the code in the service's error envelope, the v1 offer restated in the body,
 * and PAYMENT-REQUIRED as x402 v2 (decoded and validated by @x402/core) stating the same offer with
 * the code as its `error`.
 */
export function expectRefusal(r: Res, code: string): string {
  assert.equal(r.status, 402, r.text);
  assert.equal(r.body.error.code, code, r.text);
  assert.equal(r.body.error.docsUrl, `/docs/errors#${code}`);
  assert.equal(r.body.x402Version, 1);
  assert.equal(r.body.accepts.length, 1);
  const v1 = r.body.accepts[0];
  const v2 = PaymentRequiredV2Schema.parse(decodePaymentRequiredHeader(r.headers.get('payment-required')!));
  assert.equal(v2.x402Version, 2);
  assert.equal(v2.error, code);
  assert.deepEqual(v2.resource, { url: v1.resource, description: v1.description, mimeType: v1.mimeType });
  assert.equal(v2.accepts.length, 1);
  assert.deepEqual(v2.accepts[0], {
    scheme: v1.scheme,
    network: 'proof:local',
    amount: String(Math.round(Number(v1.maxAmountRequired) * 1e6)),
    asset: v1.asset,
    payTo: v1.payTo,
    maxTimeoutSeconds: v1.maxTimeoutSeconds,
    extra: { resource: v1.resource, decimals: 6 },
  });
  assert.equal(r.headers.get('x-payment-response'), null);
  assert.equal(r.headers.get('payment-response'), null);
  return r.body.error.message as string;
}

/** The decoded PAYMENT-REQUIRED header of a 402, validated by @x402/core. */
export function requiredV2(r: Res): PaymentRequiredV2 {
  assert.equal(r.status, 402, r.text);
  return PaymentRequiredV2Schema.parse(decodePaymentRequiredHeader(r.headers.get('payment-required')!)) as unknown as PaymentRequiredV2;
}

/** Rows that a settled payment writes, to show a refusal wrote none of them. */
export async function counts(h: Harness) {
  const [r] = await h.db.query(`SELECT (SELECT count(*) FROM escrows)::int AS escrows, (SELECT count(*) FROM proofs)::int AS proofs,
    (SELECT count(*) FROM x402_nonces)::int AS nonces, (SELECT size FROM log_state)::int AS log`);
  return r as { escrows: number; proofs: number; nonces: number; log: number };
}
