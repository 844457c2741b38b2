// The x402 demo's offer: the price, the paid resource, the PaymentRequirements and the 402 refusal (SPEC part 4, CONTRACT §6).
import { AppError, docsUrlFor, type ErrorCode } from '../errors.ts';
import { hashJson } from '../crypto/hash.ts';
import { encodeBase64Json, X402_HEADERS, type PaymentRequirements } from '@escrow-settlement/client/x402';

export const X402_VERSION = 1;
export const SCHEME = 'proof-sandbox';
export const NETWORK = 'proof-local';
export const PRICE = '0.01';
export const ASSET = 'USDC';
export const MAX_TIMEOUT_SECONDS = 60;
export const DESCRIPTION = 'x402 demo resource: paid through an escrow that is created, funded, delivered, verified, settled and proven for this request';

/**
 * The paid resource. Constant, so the escrow's terms can name its hash before delivery: the hash
 * check is what the verdict verifies (SPEC part 2, TermCheck hash).
 */
export const DEMO_RESOURCE = Object.freeze({
  resource: 'x402-demo',
  title: 'A paid resource',
  content: 'This JSON was delivered through an escrow. The X-PAYMENT-RESPONSE header names the escrow and its settlement proof; fetch GET /v1/proofs/{proofId}/bundle and verify it offline.',
});
export const DEMO_RESOURCE_HASH = hashJson(DEMO_RESOURCE);

/** The absolute URL of the route as this request reached it, without query or fragment (CONTRACT §6, resource). */
export function resourceUrl(request: Request): string {
  const u = new URL(request.url);
  return `${u.origin}${u.pathname}`;
}

export function paymentRequirements(resource: string, payTo: string): PaymentRequirements {
  return {
    scheme: SCHEME,
    network: NETWORK,
    maxAmountRequired: PRICE,
    resource,
    description: DESCRIPTION,
    mimeType: 'application/json',
    payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    asset: ASSET,
  };
}

/** x402 codes an offer refusal carries (SPEC part 7; all HTTP 402). */
export type X402Code = Extract<ErrorCode,
  'payment_required' | 'malformed_header' | 'version_mismatch' | 'scheme_mismatch' | 'wrong_resource' | 'wrong_payee' | 'wrong_asset' | 'bad_signature' | 'payment_invalid'>;

/**
 * A 402 that restates the offer, so a client can pay (again) from any refusal: body
 * {x402Version, accepts, error} (CONTRACT §6) through the one error boundary, plus the v2
 * PAYMENT-REQUIRED header carrying base64 of that same body.
 */
export function paymentRefusal(code: X402Code, message: string, requirements: PaymentRequirements): AppError {
  const extra = { x402Version: X402_VERSION, accepts: [requirements] };
  // Mirrors errorBody()'s envelope exactly, so the header and the body say the same thing.
  const body = { ...extra, error: { code, message, docsUrl: docsUrlFor(code) } };
  return new AppError(code, message, { extra, headers: { [X402_HEADERS.required]: encodeBase64Json(body), 'cache-control': 'no-store' } });
}
