// Reading an x402 payment from a request: which header, its version and shape, and every check against the offer that needs no database (docs/protocol.md §15.2, §15.4).
import { canonicalBytes, canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { AMOUNT_DECIMALS, MICRO } from '../units/amounts.ts';
import {
  decodeBase64Json,
  X402_HEADERS,
  type PaymentPayload,
  type PaymentPayloadV2,
  type ProofSandboxPayload,
} from '@escrow-settlement/protocol/x402';
import { paymentRefusal, type Offer, type X402Code } from './offer.ts';
import { v1Problem, v2Problem } from './shape.ts';

/** A payment header longer than this is not one (a signed v2 payment is well under 4 KB). */
export const MAX_HEADER_CHARS = 8192;

export interface PresentedPayment {
  header: typeof X402_HEADERS.payment | typeof X402_HEADERS.paymentV2;
  value: string;
  /** The x402 version the header name stands for: X-PAYMENT is v1, PAYMENT-SIGNATURE is v2 (as the SDKs send them). */
  version: 1 | 2;
}

/** The payment the request presents, or null when it presents none. Both names at once is ambiguous and refused. */
export function presentedPayment(headers: Headers, offer: Offer): PresentedPayment | null {
  const v1 = headers.get(X402_HEADERS.payment);
  const v2 = headers.get(X402_HEADERS.paymentV2);
  if (v1 !== null && v2 !== null) {
    throw paymentRefusal(
      'malformed_header',
      'send the payment in one header, X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2), not both',
      offer,
    );
  }
  if (v1 !== null) return { header: X402_HEADERS.payment, value: v1, version: 1 };
  if (v2 !== null) return { header: X402_HEADERS.paymentV2, value: v2, version: 2 };
  return null;
}

/** What a checked payment leaves for settlement. */
export interface CheckedPayment {
  version: 1 | 2;
  signed: ProofSandboxPayload;
}

/** Micro-units of a value that passed the VALUE pattern (docs/design.md §8: BigInt inside). */
function micro(value: string): bigint {
  const [whole, frac = ''] = value.split('.');
  return BigInt(whole) * MICRO + BigInt(frac.padEnd(AMOUNT_DECIMALS, '0') || '0');
}

/**
 * Decodes the payment and checks it against the offer, in the order a payer would fix things:
 * the header itself (malformed_header), its version, then each field the offer fixes
 * (scheme_mismatch, wrong_resource, wrong_payee, wrong_asset; in v2 first as `accepted` states them,
 * then as the signed authorization does), then the signature (bad_signature), then the value
 * (payment_invalid). Expiry and the nonce are checked against the database clock and table in the
 * settling transaction (settle.ts).
 */
export function checkPayment(presented: PresentedPayment, offer: Offer): CheckedPayment {
  const refuse = (code: X402Code, message: string) => paymentRefusal(code, message, offer);
  const { header, value, version } = presented;
  if (value.length === 0 || value.length > MAX_HEADER_CHARS)
    throw refuse('malformed_header', `${header} must be 1 to ${MAX_HEADER_CHARS} characters of base64`);
  let decoded: unknown;
  try {
    decoded = decodeBase64Json(value, header);
  } catch (err) {
    throw refuse('malformed_header', `${(err as Error).message}: send base64 of the JSON payment payload`);
  }
  const x402Version = (decoded as { x402Version?: unknown } | null)?.x402Version;
  if (typeof decoded !== 'object' || decoded === null || Array.isArray(decoded) || !Number.isInteger(x402Version)) {
    throw refuse('malformed_header', `${header}: payment must be a JSON object with an integer x402Version`);
  }
  if (x402Version !== version) {
    const other = version === 1 ? X402_HEADERS.paymentV2 : X402_HEADERS.payment;
    throw refuse(
      'version_mismatch',
      `${header} carries x402Version ${version}, not ${x402Version}; send x402Version ${x402Version} in ${other}${x402Version === 1 || x402Version === 2 ? '' : ' (only versions 1 and 2 exist)'}`,
    );
  }
  const problem = version === 1 ? v1Problem(decoded) : v2Problem(decoded);
  if (problem) throw refuse('malformed_header', `${header}: ${problem}`);
  try {
    canonicalize(decoded);
  } catch (err) {
    // A lone surrogate cannot be canonicalized, so nothing in it could be signed (RFC 8785 §3.2.2.2, I-JSON).
    throw refuse('malformed_header', `${header}: ${(err as Error).message}`);
  }

  const resource = offer.v1.resource;
  let signed: ProofSandboxPayload;
  if (version === 1) {
    const p = decoded as PaymentPayload;
    if (p.scheme !== offer.v1.scheme)
      throw refuse('scheme_mismatch', `scheme is "${p.scheme}"; the offer's scheme is "${offer.v1.scheme}"`);
    if (p.network !== offer.v1.network)
      throw refuse('scheme_mismatch', `network is "${p.network}"; the offer's x402 v1 network is "${offer.v1.network}"`);
    signed = p.payload;
  } else {
    const p = decoded as PaymentPayloadV2;
    const want = offer.v2.accepts[0];
    const got = p.accepted;
    if (got.scheme !== want.scheme)
      throw refuse('scheme_mismatch', `accepted.scheme is "${got.scheme}"; the offer's scheme is "${want.scheme}"`);
    if (got.network !== want.network)
      throw refuse('scheme_mismatch', `accepted.network is "${got.network}"; the offer's network is "${want.network}" (CAIP-2)`);
    if (p.resource !== undefined && p.resource.url !== resource)
      throw refuse('wrong_resource', `resource.url is ${p.resource.url}; this resource is ${resource}`);
    if (got.extra.resource !== want.extra.resource)
      throw refuse('wrong_resource', `accepted.extra.resource is ${String(got.extra.resource)}; this resource is ${resource}`);
    if (got.payTo !== want.payTo) throw refuse('wrong_payee', `accepted.payTo is ${got.payTo}; the offer's payTo is ${want.payTo}`);
    if (got.asset !== want.asset) throw refuse('wrong_asset', `accepted.asset is "${got.asset}"; the offer's asset is "${want.asset}"`);
    // `accepted` echoes the offer's requirements verbatim (x402 v2 §5.2; @x402/core's server matches it by deep equality).
    for (const k of ['amount', 'maxTimeoutSeconds', 'extra'] as const) {
      if (canonicalize(got[k]) !== canonicalize(want[k]))
        throw refuse(
          'payment_invalid',
          `accepted.${k} is ${JSON.stringify(got[k])}; the offer's is ${JSON.stringify(want[k])}: send accepts[0] verbatim`,
        );
    }
    signed = p.payload;
  }

  const a = signed.authorization;
  if (a.resource !== resource) throw refuse('wrong_resource', `authorization.resource is ${a.resource}; this resource is ${resource}`);
  if (a.to !== offer.v1.payTo) throw refuse('wrong_payee', `authorization.to is ${a.to}; the offer's payTo is ${offer.v1.payTo}`);
  if (a.asset !== offer.v1.asset)
    throw refuse('wrong_asset', `authorization.asset is "${a.asset}"; the offer's asset is "${offer.v1.asset}"`);
  if (!verifyHex(signed.signature, canonicalBytes(a), a.from)) {
    throw refuse(
      'bad_signature',
      'payload.signature does not verify with authorization.from over the canonical JSON (RFC 8785) of authorization',
    );
  }
  if (micro(a.value) < micro(offer.v1.maxAmountRequired)) {
    throw refuse('payment_invalid', `authorization.value ${a.value} is below the price ${offer.v1.maxAmountRequired} ${offer.v1.asset}`);
  }
  // Above the price is refused too, not kept as a tip: the escrow would hold more than the resource
  // costs and a mistyped value would be spent silently (docs/security.md "x402 demo").
  if (micro(a.value) > micro(offer.v1.maxAmountRequired)) {
    throw refuse(
      'payment_invalid',
      `authorization.value ${a.value} is above the price ${offer.v1.maxAmountRequired} ${offer.v1.asset}; this resource takes exactly its price (an overpayment is refused, not kept)`,
    );
  }
  return { version, signed };
}
