// x402 on the wire, v1 and v2, as the service speaks it (its protocol documentation, §15): header
// names, the scheme and networks, the payment and settlement shapes, base64 JSON and atomic amounts.
// Both sides stand on it: the service reads payments and writes 402s with it, a payer's client
// (the client package, which re-exports it) builds payments with it. Web APIs only.
import { fromBase64, toBase64, utf8 } from './crypto/bytes.ts';
import type { ErrorCode } from './errors.ts';

/*
 * Header names, as the official SDKs use them (x402 `x402` v1 and `@x402/core` v2):
 *   payment, client → service   v1 X-PAYMENT (x402Version 1)     v2 PAYMENT-SIGNATURE (x402Version 2, carries `accepted`)
 *   offer, on every 402          v1 the JSON body                 v2 PAYMENT-REQUIRED = base64 PaymentRequired v2
 *   settlement, on the 200       v1 X-PAYMENT-RESPONSE            v2 PAYMENT-RESPONSE   both {success, transaction, network, payer, …}
 * The service sends both response names on every answer, so either kind of client finds its own.
 */
export const X402_HEADERS = {
  payment: 'X-PAYMENT',
  paymentV2: 'PAYMENT-SIGNATURE',
  required: 'PAYMENT-REQUIRED',
  response: 'X-PAYMENT-RESPONSE',
  responseV2: 'PAYMENT-RESPONSE',
} as const;

/** The scheme and networks this service offers: a simulated rail, so a CAIP-2 namespace of its own in v2. */
export const X402_SCHEME = 'proof-sandbox';
export const X402_NETWORK_V1 = 'proof-local';
export const X402_NETWORK_V2 = 'proof:local';

/**
 * The codes a presented payment is refused with (all HTTP 402; the service's protocol documentation,
 * §15.4). A request that presents none is refused with payment_required. The PAYMENT-REQUIRED
 * header's `error` carries the code.
 */
export const X402_PAYMENT_REFUSALS = [
  'malformed_header',
  'version_mismatch',
  'scheme_mismatch',
  'wrong_resource',
  'wrong_payee',
  'wrong_asset',
  'bad_signature',
  'payment_invalid',
] as const satisfies readonly ErrorCode[];

/** One way to pay, as the v1 402 body's `accepts` lists it. */
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

/** x402 v2 ResourceInfo. */
export interface ResourceInfo {
  url: string;
  description?: string;
  mimeType?: string;
}

/**
 * One way to pay in x402 v2. `amount` is in atomic units (10^-decimals of the asset). `extra.resource`
 * repeats the resource URL because a v2 scheme client sees only these requirements, and the
 * authorization it signs must name the resource.
 */
export interface PaymentRequirementsV2 {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: { resource: string; decimals: number; [k: string]: unknown };
}

/** The PAYMENT-REQUIRED header, decoded (x402 v2 §5.1). `error` is the refusal's code. */
export interface PaymentRequiredV2 {
  x402Version: 2;
  error?: string;
  resource: ResourceInfo;
  accepts: PaymentRequirementsV2[];
  extensions?: Record<string, unknown>;
}

/** What the payer signs: JCS of this object, with the key `from`. `value` is a decimal amount. */
export interface PaymentAuthorization {
  from: string;
  to: string;
  value: string;
  asset: string;
  resource: string;
  nonce: string;
  validBefore: string;
}

/** The scheme payload, the same in v1 and v2. */
export interface ProofSandboxPayload {
  authorization: PaymentAuthorization;
  signature: string;
}

/** The decoded X-PAYMENT header (x402 v1). */
export interface PaymentPayload {
  x402Version: number;
  scheme: string;
  network: string;
  payload: ProofSandboxPayload;
}

/** The decoded PAYMENT-SIGNATURE header (x402 v2 §5.2): `accepted` is the chosen requirements, verbatim. */
export interface PaymentPayloadV2 {
  x402Version: 2;
  resource?: ResourceInfo;
  accepted: PaymentRequirementsV2;
  payload: ProofSandboxPayload;
  extensions?: Record<string, unknown>;
}

/** The v1 402 body: x402's shape with the service's error envelope as `error`. */
export interface PaymentRequired {
  x402Version: number;
  accepts: PaymentRequirements[];
  error: { code: string; message: string; docsUrl?: string };
}

/**
 * X-PAYMENT-RESPONSE and PAYMENT-RESPONSE: x402's SettlementResponse (`transaction` is the id of the
 * settlement proof; `network` is the v1 or v2 name) plus the escrow that settled it.
 */
export interface PaymentResponse {
  success: boolean;
  transaction: string;
  network: string;
  payer: string;
  escrowId: string;
  proofId: string;
  outcome: 'released';
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

/** "0.01" with 6 decimals → "10000" (atomic units); a TypeError for a value with more decimals. */
export function toAtomicAmount(value: string, decimals: number): string {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(value);
  if (!m || (m[2] ?? '').length > decimals)
    throw new TypeError(`amount ${JSON.stringify(value)} must be a decimal with at most ${decimals} fraction digits`);
  return (BigInt(m[1]) * 10n ** BigInt(decimals) + BigInt((m[2] ?? '').padEnd(decimals, '0') || '0')).toString();
}

/** "10000" atomic units with 6 decimals → "0.01" (shortest form). */
export function fromAtomicAmount(atomic: string, decimals: number): string {
  if (!/^\d+$/.test(atomic)) throw new TypeError(`atomic amount ${JSON.stringify(atomic)} must be a whole number`);
  const s = atomic.replace(/^0+(?=\d)/, '').padStart(decimals + 1, '0');
  const whole = s.slice(0, s.length - decimals).replace(/^0+(?=\d)/, '');
  const frac = s.slice(s.length - decimals).replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

export const encodePaymentHeader = (payment: PaymentPayload | PaymentPayloadV2): string => encodeBase64Json(payment);
export const decodePaymentHeader = (header: string): PaymentPayload => decodeBase64Json<PaymentPayload>(header, 'payment header');
export const decodePaymentResponse = (header: string): PaymentResponse =>
  decodeBase64Json<PaymentResponse>(header, 'payment response header');
export const decodePaymentRequired = (header: string): PaymentRequiredV2 =>
  decodeBase64Json<PaymentRequiredV2>(header, 'PAYMENT-REQUIRED header');
