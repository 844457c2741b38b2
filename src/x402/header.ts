// Reading an x402 payment from a request: which header, its shape, and every check against the offer that needs no database (CONTRACT §6, SPEC part 7).
import { canonicalBytes } from '../crypto/jcs.ts';
import { isHex64 } from '../crypto/bytes.ts';
import { verifyHex } from '../crypto/ed25519.ts';
import { AMOUNT_DECIMALS, MICRO } from '../units/amounts.ts';
import { decodeBase64Json, X402_HEADERS, type PaymentAuthorization, type PaymentPayload, type PaymentRequirements } from '@escrow-settlement/client/x402';
import { paymentRefusal } from './offer.ts';

/** A payment header longer than this is not one (a signed authorization is well under 2 KB). */
export const MAX_HEADER_CHARS = 8192;

export interface PresentedPayment {
  /** The header it came in; the version it allows follows from it (v1: 1; v2 name: 1 or 2). */
  header: typeof X402_HEADERS.payment | typeof X402_HEADERS.paymentV2;
  value: string;
  versions: readonly number[];
}

/**
 * The payment the request presents, or null when it presents none. X-PAYMENT is the x402 v1 name
 * and takes x402Version 1; PAYMENT-SIGNATURE is the v2 name for the same base64 payload and also
 * takes x402Version 2. Both at once is ambiguous and refused.
 */
export function presentedPayment(headers: Headers, offer: PaymentRequirements): PresentedPayment | null {
  const v1 = headers.get(X402_HEADERS.payment);
  const v2 = headers.get(X402_HEADERS.paymentV2);
  if (v1 !== null && v2 !== null) {
    throw paymentRefusal('malformed_header', 'send the payment in one header, X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (x402 v2), not both', offer);
  }
  if (v1 !== null) return { header: X402_HEADERS.payment, value: v1, versions: [1] };
  if (v2 !== null) return { header: X402_HEADERS.paymentV2, value: v2, versions: [1, 2] };
  return null;
}

type Problem = string | null;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
const VALUE = /^\d{1,18}(\.\d{1,6})?$/;

/** Exactly these fields, no others (CONTRACT §2, unknown fields are refused). */
function fields(o: unknown, at: string, names: readonly string[]): Problem {
  if (!isObj(o)) return `${at} must be a JSON object`;
  for (const k of Object.keys(o)) if (!names.includes(k)) return `${at}.${k} is not a known field`;
  for (const k of names) if (!(k in o)) return `${at}.${k} is required`;
  return null;
}

function str(v: unknown, at: string, max: number): Problem {
  return typeof v === 'string' && v.length >= 1 && v.length <= max ? null : `${at} must be a string of 1 to ${max} characters`;
}

/** The first way `p` is not an x402 payment payload, named by its path, or null. */
function shapeProblem(p: unknown): Problem {
  const top = fields(p, 'payment', ['x402Version', 'scheme', 'network', 'payload']);
  if (top) return top;
  const { x402Version, scheme, network, payload } = p as Record<string, unknown>;
  if (!Number.isInteger(x402Version)) return 'payment.x402Version must be an integer';
  const problem = str(scheme, 'payment.scheme', 64) ?? str(network, 'payment.network', 64) ?? fields(payload, 'payment.payload', ['authorization', 'signature']);
  if (problem) return problem;
  const { authorization: a, signature } = payload as Record<string, unknown>;
  if (typeof signature !== 'string') return 'payment.payload.signature must be a hex string';
  const at = 'payment.payload.authorization';
  const fieldProblem = fields(a, at, ['from', 'to', 'value', 'asset', 'resource', 'nonce', 'validBefore']);
  if (fieldProblem) return fieldProblem;
  const auth = a as Record<string, unknown>;
  if (!isHex64(auth.from)) return `${at}.from must be 64 lowercase hex characters (the payer's public key)`;
  if (!isHex64(auth.to)) return `${at}.to must be 64 lowercase hex characters (the payee's public key)`;
  if (typeof auth.value !== 'string' || !VALUE.test(auth.value)) return `${at}.value must be a decimal string with at most 6 fraction digits, e.g. "0.01"`;
  const assetProblem = str(auth.asset, `${at}.asset`, 64) ?? str(auth.resource, `${at}.resource`, 2048);
  if (assetProblem) return assetProblem;
  if (!isHex64(auth.nonce)) return `${at}.nonce must be 64 lowercase hex characters`;
  if (typeof auth.validBefore !== 'string' || !ISO.test(auth.validBefore) || Number.isNaN(Date.parse(auth.validBefore))) {
    return `${at}.validBefore must be an ISO 8601 date-time with a zone`;
  }
  return null;
}

/** Micro-units of a value that passed the VALUE pattern (DESIGN habit 13: BigInt inside). */
function micro(value: string): bigint {
  const [whole, frac = ''] = value.split('.');
  return BigInt(whole) * MICRO + BigInt(frac.padEnd(AMOUNT_DECIMALS, '0') || '0');
}

/**
 * Decodes the payment and checks it against the offer, in the order a payer would fix things:
 * the header itself (malformed_header), then each field the offer fixes (version_mismatch,
 * scheme_mismatch, wrong_resource, wrong_payee, wrong_asset), then the signature (bad_signature),
 * then the value (payment_invalid). Expiry and the nonce are checked against the database clock
 * and table in the settling transaction (settle.ts). Returns the signed authorization.
 */
export function checkPayment(presented: PresentedPayment, offer: PaymentRequirements): PaymentAuthorization {
  const refuse = (code: Parameters<typeof paymentRefusal>[0], message: string) => paymentRefusal(code, message, offer);
  const { header, value, versions } = presented;
  if (value.length === 0 || value.length > MAX_HEADER_CHARS) throw refuse('malformed_header', `${header} must be 1 to ${MAX_HEADER_CHARS} characters of base64`);
  let decoded: unknown;
  try {
    decoded = decodeBase64Json(value, header);
  } catch (err) {
    throw refuse('malformed_header', `${(err as Error).message}: send base64 of the JSON payment payload`);
  }
  const problem = shapeProblem(decoded);
  if (problem) throw refuse('malformed_header', `${header}: ${problem}`);
  const p = decoded as PaymentPayload;
  const a = p.payload.authorization;
  if (!versions.includes(p.x402Version)) {
    throw refuse('version_mismatch', `x402Version ${p.x402Version} is not accepted in ${header}; use ${versions.join(' or ')}`);
  }
  if (p.scheme !== offer.scheme) throw refuse('scheme_mismatch', `scheme is "${p.scheme}"; the offer's scheme is "${offer.scheme}"`);
  if (p.network !== offer.network) throw refuse('scheme_mismatch', `network is "${p.network}"; the offer's network is "${offer.network}"`);
  if (a.resource !== offer.resource) throw refuse('wrong_resource', `authorization.resource is ${a.resource}; this resource is ${offer.resource}`);
  if (a.to !== offer.payTo) throw refuse('wrong_payee', `authorization.to is ${a.to}; the offer's payTo is ${offer.payTo}`);
  if (a.asset !== offer.asset) throw refuse('wrong_asset', `authorization.asset is "${a.asset}"; the offer's asset is "${offer.asset}"`);
  if (!verifyHex(p.payload.signature, canonicalBytes(a), a.from)) {
    throw refuse('bad_signature', 'payload.signature does not verify with authorization.from over the canonical JSON (RFC 8785) of authorization');
  }
  if (micro(a.value) < micro(offer.maxAmountRequired)) {
    throw refuse('payment_invalid', `authorization.value ${a.value} is below the price ${offer.maxAmountRequired} ${offer.asset}`);
  }
  return a;
}
