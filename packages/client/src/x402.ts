// x402 from the payer's side, v1 and v2: the wire shapes, signing a payment for a 402 offer, reading the service's headers. Web APIs only.
import { fromBase64, toBase64, toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { publicKeyFromSecret, signBody } from '@escrow-settlement/protocol/keys';

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

export interface PaymentOptions {
  /** Amount to pay, decimal (default: the offer's price). */
  value?: string;
  /** 64 hex characters (default: 32 random bytes). A nonce settles once. */
  nonce?: string;
  /** Timestamp after which the authorization is void (default: now + maxTimeoutSeconds). */
  validBefore?: string;
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

function requireFields(r: object | null | undefined, what: string, strings: readonly string[]): void {
  if (r === null || typeof r !== 'object') throw new TypeError(`${what} must be an object from the 402 offer`);
  const o = r as Record<string, unknown>;
  for (const k of strings) if (typeof o[k] !== 'string') throw new TypeError(`${what}.${k} must be a string`);
  if (!Number.isInteger(o.maxTimeoutSeconds) || (o.maxTimeoutSeconds as number) < 1)
    throw new TypeError(`${what}.maxTimeoutSeconds must be a positive whole number`);
}

/** Signs an authorization for `to`/`value`/`asset`/`resource` with `secretKey`. */
function authorize(
  secretKey: string,
  fields: Pick<PaymentAuthorization, 'to' | 'value' | 'asset' | 'resource'>,
  maxTimeoutSeconds: number,
  opts: PaymentOptions,
): ProofSandboxPayload {
  const authorization: PaymentAuthorization = {
    from: publicKeyFromSecret(secretKey),
    to: fields.to,
    value: opts.value ?? fields.value,
    asset: fields.asset,
    resource: fields.resource,
    nonce: opts.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
    validBefore: opts.validBefore ?? new Date(Date.now() + maxTimeoutSeconds * 1000).toISOString(),
  };
  return { authorization, signature: signAuthorization(secretKey, authorization) };
}

/** Hex Ed25519 signature by `from` over JCS(authorization). */
export function signAuthorization(secretKey: string, authorization: PaymentAuthorization): string {
  return signBody(secretKey, authorization).signature;
}

/** An x402 v1 payment for `requirements` (one of the 402 body's `accepts`), signed with `secretKey`. */
export function createPayment(requirements: PaymentRequirements, secretKey: string, opts: PaymentOptions = {}): PaymentPayload {
  requireFields(requirements, 'requirements', ['scheme', 'network', 'maxAmountRequired', 'resource', 'payTo', 'asset']);
  const { scheme, network, payTo, maxAmountRequired, asset, resource } = requirements;
  return {
    x402Version: 1,
    scheme,
    network,
    payload: authorize(secretKey, { to: payTo, value: maxAmountRequired, asset, resource }, requirements.maxTimeoutSeconds, opts),
  };
}

/**
 * The scheme payload for x402 v2 requirements: what `@x402/core`'s scheme clients return. The
 * value is `amount` turned back into a decimal with `extra.decimals`; the resource is `extra.resource`.
 */
export function createSchemePayload(
  requirements: PaymentRequirementsV2,
  secretKey: string,
  opts: PaymentOptions = {},
): ProofSandboxPayload {
  requireFields(requirements, 'requirements', ['scheme', 'network', 'amount', 'asset', 'payTo']);
  const { extra } = requirements;
  if (!extra || typeof extra.resource !== 'string' || !Number.isInteger(extra.decimals))
    throw new TypeError('requirements.extra must carry resource (string) and decimals (integer)');
  const value = fromAtomicAmount(requirements.amount, extra.decimals);
  return authorize(
    secretKey,
    { to: requirements.payTo, value, asset: requirements.asset, resource: extra.resource },
    requirements.maxTimeoutSeconds,
    opts,
  );
}

/** An x402 v2 payment for the PAYMENT-REQUIRED offer (its accepts[`index`]), carrying `accepted` verbatim. */
export function createPaymentV2(
  offer: PaymentRequiredV2,
  secretKey: string,
  opts: PaymentOptions & { index?: number } = {},
): PaymentPayloadV2 {
  const accepted = offer?.accepts?.[opts.index ?? 0];
  if (!accepted) throw new TypeError(`offer.accepts[${opts.index ?? 0}] is missing: pass the decoded PAYMENT-REQUIRED header`);
  return { x402Version: 2, resource: offer.resource, accepted, payload: createSchemePayload(accepted, secretKey, opts) };
}

/**
 * A scheme client for `@x402/core`'s x402Client (`client.register(X402_NETWORK_V2, proofSandboxScheme(secretKey))`),
 * so the official v2 client can pay this service. No dependency on @x402/core: the shape is structural.
 */
export function proofSandboxScheme(secretKey: string, opts: PaymentOptions = {}) {
  publicKeyFromSecret(secretKey);
  return {
    scheme: X402_SCHEME,
    // Typed as the SDK hands requirements over (extra: any record); createSchemePayload checks extra at run time.
    async createPaymentPayload(
      x402Version: number,
      requirements: Omit<PaymentRequirementsV2, 'extra'> & { extra: Record<string, unknown> },
    ) {
      return {
        x402Version,
        payload: createSchemePayload(requirements as PaymentRequirementsV2, secretKey, opts) as unknown as Record<string, unknown>,
      };
    },
  };
}

/**
 * The X-PAYMENT header value that pays for v1 `requirements`:
 * base64 JSON {x402Version: 1, scheme, network, payload: {authorization, signature}}.
 */
export function createPaymentHeader(requirements: PaymentRequirements, secretKey: string, opts: PaymentOptions = {}): string {
  return encodeBase64Json(createPayment(requirements, secretKey, opts));
}

/** The PAYMENT-SIGNATURE header value that pays for a decoded PAYMENT-REQUIRED offer (x402 v2). */
export function createPaymentHeaderV2(offer: PaymentRequiredV2, secretKey: string, opts: PaymentOptions & { index?: number } = {}): string {
  return encodeBase64Json(createPaymentV2(offer, secretKey, opts));
}

export const encodePaymentHeader = (payment: PaymentPayload | PaymentPayloadV2): string => encodeBase64Json(payment);
export const decodePaymentHeader = (header: string): PaymentPayload => decodeBase64Json<PaymentPayload>(header, 'payment header');
export const decodePaymentResponse = (header: string): PaymentResponse =>
  decodeBase64Json<PaymentResponse>(header, 'payment response header');
export const decodePaymentRequired = (header: string): PaymentRequiredV2 =>
  decodeBase64Json<PaymentRequiredV2>(header, 'PAYMENT-REQUIRED header');
