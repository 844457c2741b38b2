// The x402 demo's offer: the price, the paid resource, the v1 and v2 requirements and the 402 refusal (docs/protocol.md §15.1).
import { AppError } from '../errors.ts';
import { hashJson } from '@escrow-settlement/protocol/crypto/hash';
import { AMOUNT_DECIMALS } from '../units/amounts.ts';
import {
  encodeBase64Json,
  toAtomicAmount,
  X402_HEADERS,
  X402_NETWORK_V1,
  X402_NETWORK_V2,
  X402_SCHEME,
  type X402_PAYMENT_REFUSALS,
  type PaymentRequiredV2,
  type PaymentRequirements,
  type PaymentRequirementsV2,
} from '@escrow-settlement/protocol/x402';

export const PRICE = '0.01';
export const ASSET = 'USDC';
export const MAX_TIMEOUT_SECONDS = 60;
export const MIME_TYPE = 'application/json';
export const DEMO_PATH = '/v1/x402/demo';
export const DESCRIPTION =
  'x402 demo resource: paid through an escrow that is created, funded, delivered, verified, settled and proven for this request';

/**
 * The paid resource. Constant, so the escrow's terms can name its hash before delivery: the hash
 * check is what the verdict verifies (docs/protocol.md §3.3, the hash check).
 */
export const DEMO_RESOURCE = Object.freeze({
  resource: 'x402-demo',
  title: 'A paid resource',
  content:
    'This JSON was delivered through an escrow. The X-PAYMENT-RESPONSE header names the escrow and its settlement proof; fetch GET /v1/proofs/{proofId}/bundle and verify it offline.',
});
export const DEMO_RESOURCE_HASH = hashJson(DEMO_RESOURCE);

/** One offer, in both x402 versions' words. */
export interface Offer {
  v1: PaymentRequirements;
  v2: Omit<PaymentRequiredV2, 'error'> & { accepts: [PaymentRequirementsV2] };
}

/**
 * The absolute URL of the paid resource: PUBLIC_URL + the route's path (docs/protocol.md §15). Never built
 * from the request's Host header, which the client controls (docs/protocol.md §15.4: a payment signed for
 * evil.example would otherwise name "this" resource).
 */
export function resourceUrl(publicUrl: string): string {
  return `${publicUrl}${DEMO_PATH}`;
}

export function demoOffer(resource: string, payTo: string): Offer {
  return {
    v1: {
      scheme: X402_SCHEME,
      network: X402_NETWORK_V1,
      maxAmountRequired: PRICE,
      resource,
      description: DESCRIPTION,
      mimeType: MIME_TYPE,
      payTo,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      asset: ASSET,
    },
    v2: {
      x402Version: 2,
      resource: { url: resource, description: DESCRIPTION, mimeType: MIME_TYPE },
      accepts: [
        {
          scheme: X402_SCHEME,
          network: X402_NETWORK_V2,
          // x402 v2 amounts are atomic units; this service's amounts have 6 decimals (docs/protocol.md §2.3).
          amount: toAtomicAmount(PRICE, AMOUNT_DECIMALS),
          asset: ASSET,
          payTo,
          maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
          extra: { resource, decimals: AMOUNT_DECIMALS },
        },
      ],
    },
  };
}

/** x402 codes an offer refusal carries (docs/protocol.md §15.4; all HTTP 402). */
export type X402Code = 'payment_required' | (typeof X402_PAYMENT_REFUSALS)[number];

/**
 * A 402 that restates the offer, so a client can pay (again) from any refusal. The body is x402
 * v1's {x402Version: 1, accepts, error} with the service's error envelope as `error` (docs/protocol.md §15.4:
 * the envelope, not x402's string); the PAYMENT-REQUIRED header is x402 v2's PaymentRequired, whose
 * string `error` carries the code (as @x402/core's server puts its invalidReason there).
 */
export function paymentRefusal(code: X402Code, message: string, offer: Offer): AppError {
  const required: PaymentRequiredV2 = { x402Version: 2, error: code, resource: offer.v2.resource, accepts: offer.v2.accepts };
  return new AppError(code, message, {
    extra: { x402Version: 1, accepts: [offer.v1] },
    headers: { [X402_HEADERS.required]: encodeBase64Json(required), 'cache-control': 'no-store' },
  });
}
