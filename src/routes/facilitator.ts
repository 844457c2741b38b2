// The x402 facilitator (docs/x402.md): auth-capture payments on a CAIP-2 escrow: network, each one
// an escrow. Base URL for @x402/core's HTTPFacilitatorClient: PUBLIC_URL + /v1/x402/facilitator.
import { defineRoutes, readById } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { check } from '../validate.ts';
import { FacilitatorBody } from '../x402/facilitator/wire.ts';
import { settle, supported, verify } from '../x402/facilitator/handle.ts';
import { paymentStatus, PAYMENT_STATUSES } from '../x402/facilitator/status.ts';

const BASE = '/v1/x402/facilitator';
const REFUSALS =
  'malformed_header, version_mismatch, scheme_mismatch, wrong_resource, wrong_payee, wrong_asset, bad_signature, payment_invalid, terms_mismatch';

export const facilitatorRoutes = defineRoutes({ tag: 'x402', access: 'key', rate: 'key' }, [
  {
    route: `GET ${BASE}/supported`,
    summary:
      'x402 v2 facilitator: the payment kinds it settles (scheme auth-capture, paymentFlow escrow, on X402_NETWORK) and its signer (the active issuer key).',
    success: {
      status: 200,
      description:
        '{kinds: [{x402Version: 2, scheme: "auth-capture", network, extra: {paymentFlow: "escrow", decimals: 6, assets}}], extensions: [], signers: {"escrow:*": [issuer public key]}}',
    },
    errors: ['unauthorized', 'rate_limited'],
    handler: async ({ svc }) => json(await supported(svc)),
  },
  {
    route: `POST ${BASE}/verify`,
    summary:
      "x402 v2 facilitator: checks a collect authorization against its auth-capture requirements (every field, the payer's signature, validBefore within maxTimeoutSeconds, the nonce unused, the payer's mandate caps) and writes nothing.",
    body: FacilitatorBody,
    success: {
      status: 200,
      description: `{isValid: true, payer} or {isValid: false, invalidReason, invalidMessage, payer?}; invalidReason is one of ${REFUSALS}`,
    },
    errors: ['bad_request', 'unauthorized', 'payload_too_large', 'rate_limited'],
    async handler({ svc, request, caller }) {
      return json(await verify(svc, caller, check(await readJson(request), FacilitatorBody)));
    },
  },
  {
    route: `POST ${BASE}/settle`,
    signsAgainstNow: true,
    summary:
      'x402 v2 facilitator: settles an auth-capture payment. A collect (payload {authorization, signature}) creates and funds one escrow, idempotent per (payTo, nonce); a capture (payload {type: "capture", paymentId, delivery: {payload, submittedAt, signature}}) judges the payee-signed delivery against the terms: a pass settles with a proof, a fail answers verdict_failed and leaves the escrow delivered; a void (payload {type: "void", paymentId, signedAt, signature}) refunds with a proof; a refund (payload {type: "refund", paymentId, amount, reason?, signedAt, signature}) gives back part of a captured payment within its refund window, with an adjustment proof. A capture may claim part of the hold (amount) and set its fee (feeBps). Each consent is single use: the same one again answers the first outcome.',
    body: FacilitatorBody,
    success: {
      status: 200,
      description: `collect {success: true, transaction: escrowId, network, payer, amount, extra: {escrowId}}; capture {success: true, transaction: proofId, network, payer, extra: {escrowId, state: "settled"}} or {success: false, errorReason: "verdict_failed", transaction: escrowId, extra: {escrowId, verdict}}; void {success: true, transaction: proofId, extra: {escrowId, state: "refunded"}}; refund {success: true, transaction: adjustment proofId, amount, extra: {escrowId, refundedTotal}} (atomic units); a refusal {success: false, errorReason, errorMessage, transaction: "", network} with errorReason one of ${REFUSALS}, verdict_failed, custody_failed, invalid_state (a refund past its deadline or over the remaining amount)`,
    },
    errors: ['bad_request', 'unauthorized', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      return json(await settle(ctx.svc, ctx.caller, check(await readJson(ctx.request), FacilitatorBody)));
    },
  },
  {
    ...readById(
      `${BASE}/payments/:paymentId`,
      "x402 v2 facilitator: a payment's settlement status, by its paymentId (the escrow id the collect answered). A payer or resource server whose settle timed out reads the outcome here instead of paying twice.",
      `{paymentId, status: one of ${PAYMENT_STATUSES.join(', ')}, amounts: {authorized, captured, refunded, fee} (atomic units, strings), proofs: [proof ids], captureDeadline, refundDeadline (timestamps or null)}`,
      paymentStatus,
      'paymentId',
    ),
    tenant: 'escrow',
  },
]);
