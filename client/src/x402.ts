// x402 from the payer's side: sign a payment for a 402 offer, read the service's x402 headers (SPEC part 4 "x402 demo", CONTRACT §6). Web APIs only.
import { fromBase64, toBase64, toHex, utf8 } from './crypto/bytes.ts';
import { publicKeyFromSecret, signBody } from './keys.ts';

/*
 * Header names. The service speaks both x402 transports (v1 headers and the v2 names):
 *   payment, client → service   v1 X-PAYMENT            v2 PAYMENT-SIGNATURE  same base64 JSON payload;
 *                                                                             x402Version 2 is allowed only under the v2 name
 *   offer, on the 402            v1 the JSON body        v2 PAYMENT-REQUIRED   base64 of that same body
 *   settlement, on the 200       v1 X-PAYMENT-RESPONSE   v2 PAYMENT-RESPONSE   same base64 JSON {escrowId, proofId, outcome}
 * The service sends both response names on every answer, so either kind of client finds its own.
 */
export const X402_HEADERS = {
  payment: 'X-PAYMENT',
  paymentV2: 'PAYMENT-SIGNATURE',
  required: 'PAYMENT-REQUIRED',
  response: 'X-PAYMENT-RESPONSE',
  responseV2: 'PAYMENT-RESPONSE',
} as const;

/** One way to pay, as the 402 body's `accepts` lists it (CONTRACT §6, PaymentRequirements). */
export interface PaymentRequirements {
  scheme: string;
  network: string;
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
  payTo: string;
  maxTimeoutSeconds: number;
  asset: string;
}

/** What the payer signs: JCS of this object, with the key `from` (CONTRACT §6, X-PAYMENT). */
export interface PaymentAuthorization {
  from: string;
  to: string;
  value: string;
  asset: string;
  resource: string;
  nonce: string;
  validBefore: string;
}

/** The decoded payment header. */
export interface PaymentPayload {
  x402Version: number;
  scheme: string;
  network: string;
  payload: { authorization: PaymentAuthorization; signature: string };
}

/** The 402 body (and, base64-encoded, the PAYMENT-REQUIRED header). */
export interface PaymentRequired {
  x402Version: number;
  accepts: PaymentRequirements[];
  error: { code: string; message: string; docsUrl?: string };
}

/** X-PAYMENT-RESPONSE / PAYMENT-RESPONSE: the escrow that settled the payment and its proof. */
export interface PaymentResponse {
  escrowId: string;
  proofId: string;
  outcome: 'released';
}

export interface PaymentOptions {
  /** Amount to pay (default: the offer's maxAmountRequired). */
  value?: string;
  /** 64 hex characters (default: 32 random bytes). A nonce settles once. */
  nonce?: string;
  /** Timestamp after which the authorization is void (default: now + maxTimeoutSeconds). */
  validBefore?: string;
  /** 1 for X-PAYMENT (default); 2 only under the v2 header name PAYMENT-SIGNATURE. */
  x402Version?: 1 | 2;
}

/** base64 (RFC 4648 §4, padded) of the UTF-8 JSON text of `value`: how every x402 header is encoded. */
export function encodeBase64Json(value: unknown): string {
  return toBase64(utf8(JSON.stringify(value)));
}

/** The JSON value of a base64 x402 header; a TypeError naming `name` when it is not one. */
export function decodeBase64Json<T = unknown>(header: string, name = 'header'): T {
  const bytes = fromBase64(header, name);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new TypeError(`${name} is not base64 of UTF-8 text`);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new TypeError(`${name} is not base64 of JSON`);
  }
}

function requireOffer(r: PaymentRequirements): void {
  if (r === null || typeof r !== 'object') throw new TypeError('requirements must be an object from the 402 body\'s accepts');
  for (const k of ['scheme', 'network', 'maxAmountRequired', 'resource', 'payTo', 'asset'] as const) {
    if (typeof r[k] !== 'string') throw new TypeError(`requirements.${k} must be a string`);
  }
  if (!Number.isInteger(r.maxTimeoutSeconds) || r.maxTimeoutSeconds < 1) throw new TypeError('requirements.maxTimeoutSeconds must be a positive whole number');
}

/** A payment for `requirements`, signed with `secretKey` (hex64): the decoded form of the header. */
export function createPayment(requirements: PaymentRequirements, secretKey: string, opts: PaymentOptions = {}): PaymentPayload {
  requireOffer(requirements);
  const authorization: PaymentAuthorization = {
    from: publicKeyFromSecret(secretKey),
    to: requirements.payTo,
    value: opts.value ?? requirements.maxAmountRequired,
    asset: requirements.asset,
    resource: requirements.resource,
    nonce: opts.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
    validBefore: opts.validBefore ?? new Date(Date.now() + requirements.maxTimeoutSeconds * 1000).toISOString(),
  };
  return {
    x402Version: opts.x402Version ?? 1,
    scheme: requirements.scheme,
    network: requirements.network,
    payload: { authorization, signature: signAuthorization(secretKey, authorization) },
  };
}

/** Hex Ed25519 signature by `from` over JCS(authorization) (CONTRACT §6). */
export function signAuthorization(secretKey: string, authorization: PaymentAuthorization): string {
  return signBody(secretKey, authorization).signature;
}

/**
 * The X-PAYMENT (or PAYMENT-SIGNATURE) header value that pays for `requirements` (SPEC part 4,
 * "Client helper"): base64 JSON {x402Version, scheme, network, payload: {authorization, signature}}.
 */
export function createPaymentHeader(requirements: PaymentRequirements, secretKey: string, opts: PaymentOptions = {}): string {
  return encodeBase64Json(createPayment(requirements, secretKey, opts));
}

export const encodePaymentHeader = (payment: PaymentPayload): string => encodeBase64Json(payment);
export const decodePaymentHeader = (header: string): PaymentPayload => decodeBase64Json<PaymentPayload>(header, 'payment header');
export const decodePaymentResponse = (header: string): PaymentResponse => decodeBase64Json<PaymentResponse>(header, 'payment response header');
export const decodePaymentRequired = (header: string): PaymentRequired => decodeBase64Json<PaymentRequired>(header, 'PAYMENT-REQUIRED header');
