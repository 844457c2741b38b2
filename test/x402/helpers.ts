// Shared steps of the x402 tests: read the offer, pay it, and count what the database kept.
import assert from 'node:assert/strict';
import type { Harness, Res } from '../harness.ts';
import { decodeBase64Json, type PaymentRequired, type PaymentRequirements } from '@escrow-settlement/client';

export const DEMO = '/v1/x402/demo';

/** GET the demo without payment; asserts the 402 and returns the offer. */
export async function offer(h: Harness, headers: Record<string, string> = {}): Promise<PaymentRequirements> {
  const r = await h.req('GET', DEMO, undefined, headers);
  assert.equal(r.status, 402, r.text);
  return (r.body as PaymentRequired).accepts[0];
}

export const pay = (h: Harness, header: string, name = 'X-PAYMENT', extra: Record<string, string> = {}) =>
  h.req('GET', DEMO, undefined, { [name]: header, ...extra });

/** Asserts an x402 refusal: 402, the code, the offer restated in the body and in PAYMENT-REQUIRED. */
export function expectRefusal(r: Res, code: string): string {
  assert.equal(r.status, 402, r.text);
  assert.equal(r.body.error.code, code, r.text);
  assert.equal(r.body.error.docsUrl, `/docs/errors#${code}`);
  assert.equal(r.body.x402Version, 1);
  assert.equal(r.body.accepts.length, 1);
  assert.deepEqual(decodeBase64Json(r.headers.get('payment-required')!), r.body, 'PAYMENT-REQUIRED is base64 of the 402 body');
  assert.equal(r.headers.get('x-payment-response'), null);
  return r.body.error.message as string;
}

/** Rows that a settled payment writes, to show a refusal wrote none of them. */
export async function counts(h: Harness) {
  const [r] = await h.db.query(`SELECT (SELECT count(*) FROM escrows)::int AS escrows, (SELECT count(*) FROM proofs)::int AS proofs,
    (SELECT count(*) FROM x402_nonces)::int AS nonces, (SELECT size FROM log_state)::int AS log`);
  return r as { escrows: number; proofs: number; nonces: number; log: number };
}
