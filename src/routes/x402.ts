// The x402 demo route: a paid resource settled through the escrow lifecycle (SPEC part 4 "x402 demo", CONTRACT §6).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { encodeBase64Json, X402_HEADERS } from '@escrow-settlement/client/x402';
import { DEMO_RESOURCE, PRICE, ASSET, paymentRefusal, paymentRequirements, resourceUrl } from '../x402/offer.ts';
import { checkPayment, presentedPayment } from '../x402/header.ts';
import { demoPayee } from '../x402/payee.ts';
import { settlePayment } from '../x402/settle.ts';

/*
 * x402 v1 and v2 header names (both transports are spoken; see client/src/x402.ts X402_HEADERS):
 *   X-PAYMENT (v1)           ≡ PAYMENT-SIGNATURE (v2)  request: base64 JSON payment; x402Version 2 only under the v2 name
 *   402 JSON body (v1)       ≡ PAYMENT-REQUIRED (v2)   response header on every 402: base64 of the 402 body
 *   X-PAYMENT-RESPONSE (v1)  ≡ PAYMENT-RESPONSE (v2)   response headers on the 200, both always sent: base64 JSON {escrowId, proofId, outcome}
 */
export const x402Routes = () => defineRoutes([
  {
    method: 'GET', path: '/v1/x402/demo', access: 'key', rate: 'key', tag: 'x402',
    summary: `A paid resource (${PRICE} ${ASSET}). Without a payment: 402 {x402Version, accepts: [PaymentRequirements], error}. With X-PAYMENT (or PAYMENT-SIGNATURE) signed by the payer: the whole escrow lifecycle runs for the request in one transaction and the resource comes back with X-PAYMENT-RESPONSE (and PAYMENT-RESPONSE) {escrowId, proofId, outcome}.`,
    success: { status: 200, description: 'The resource JSON; headers X-PAYMENT-RESPONSE and PAYMENT-RESPONSE carry base64 JSON {escrowId, proofId, outcome: "released"}' },
    errors: ['unauthorized', 'payment_required', 'malformed_header', 'version_mismatch', 'scheme_mismatch', 'wrong_resource', 'wrong_payee', 'wrong_asset', 'bad_signature', 'payment_invalid', 'bad_request', 'custody_failed', 'rate_limited'],
    async handler({ request, svc }) {
      const payee = await demoPayee(svc.db);
      const offer = paymentRequirements(resourceUrl(request), payee.publicKey);
      const presented = presentedPayment(request.headers, offer);
      if (!presented) {
        throw paymentRefusal('payment_required', `this resource costs ${PRICE} ${ASSET}: sign one of accepts with createPaymentHeader and send it in ${X402_HEADERS.payment}`, offer);
      }
      const authorization = checkPayment(presented, offer);
      const settled = await settlePayment(svc, { authorization, offer, payee });
      const answer = encodeBase64Json(settled);
      return json(DEMO_RESOURCE, 200, { [X402_HEADERS.response]: answer, [X402_HEADERS.responseV2]: answer, 'cache-control': 'no-store' });
    },
  },
]);
