// The x402 demo route: a paid resource settled through the escrow lifecycle (docs/protocol.md §15).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import {
  encodeBase64Json,
  X402_HEADERS,
  X402_NETWORK_V1,
  X402_NETWORK_V2,
  X402_PAYMENT_REFUSALS,
  type PaymentResponse,
} from '@escrow-settlement/protocol/x402';
import { DEMO_PATH, DEMO_RESOURCE, PRICE, ASSET, demoOffer, paymentRefusal, resourceUrl } from '../x402/offer.ts';
import { checkPayment, presentedPayment } from '../x402/header.ts';
import { demoPayee } from '../x402/payee.ts';
import { settlePayment } from '../x402/settle.ts';

/*
 * x402 v1 and v2, as the official SDKs speak them (see packages/protocol/src/x402.ts X402_HEADERS):
 *   request    X-PAYMENT (x402Version 1)          PAYMENT-SIGNATURE (x402Version 2, with `accepted`)
 *   402        JSON body {x402Version: 1, accepts, error: envelope}   PAYMENT-REQUIRED: base64 PaymentRequired v2
 *   200        X-PAYMENT-RESPONSE and PAYMENT-RESPONSE, both always: base64 {success, transaction, network, payer, escrowId, proofId, outcome}
 */
export const x402Routes = defineRoutes({ tag: 'x402', access: 'key', rate: 'key' }, [
  {
    route: `GET ${DEMO_PATH}`,
    summary: `A paid resource (${PRICE} ${ASSET}). Without a payment: 402 with the x402 v1 body {x402Version: 1, accepts, error} and the x402 v2 PAYMENT-REQUIRED header. With X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2) signed by the payer: the whole escrow lifecycle runs for the request in one transaction and the resource comes back with X-PAYMENT-RESPONSE and PAYMENT-RESPONSE {success, transaction, network, payer, escrowId, proofId, outcome}. The resource URL is PUBLIC_URL + this path.`,
    success: {
      status: 200,
      description:
        'The resource JSON; headers X-PAYMENT-RESPONSE and PAYMENT-RESPONSE carry base64 JSON {success: true, transaction: proofId, network, payer, escrowId, proofId, outcome: "released"}',
    },
    errors: ['unauthorized', 'payment_required', ...X402_PAYMENT_REFUSALS, 'bad_request', 'custody_failed', 'rate_limited'],
    async handler({ svc, request }) {
      const payee = await demoPayee(svc.db);
      // PUBLIC_URL, never the Host header (docs/protocol.md §15.4).
      const offer = demoOffer(resourceUrl(svc.config.publicUrl), payee.publicKey);
      const presented = presentedPayment(request.headers, offer);
      if (!presented) {
        throw paymentRefusal(
          'payment_required',
          `this resource costs ${PRICE} ${ASSET}: sign accepts[0] and send it in ${X402_HEADERS.payment} (x402 v1, createPaymentHeader) or ${X402_HEADERS.paymentV2} (x402 v2, createPaymentHeaderV2 from the ${X402_HEADERS.required} header)`,
          offer,
        );
      }
      const checked = checkPayment(presented, offer);
      const settled = await settlePayment(svc, { signed: checked.signed, offer, payee });
      // x402's SettlementResponse: `transaction` names the settlement proof, the record of this payment.
      const answer = (network: string): PaymentResponse => ({
        success: true,
        transaction: settled.proofId,
        network,
        payer: settled.payer,
        escrowId: settled.escrowId,
        proofId: settled.proofId,
        outcome: 'released',
      });
      return json(DEMO_RESOURCE, 200, {
        [X402_HEADERS.response]: encodeBase64Json(answer(X402_NETWORK_V1)),
        [X402_HEADERS.responseV2]: encodeBase64Json(answer(X402_NETWORK_V2)),
        'cache-control': 'no-store',
      });
    },
  },
]);
