// x402 from the payer's side, v1 and v2: signing a payment for a 402 offer. The wire (header names,
// shapes, base64 JSON, atomic amounts) is the protocol package's, re-exported here so this module's
// surface is what it always was. Web APIs only.
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { publicKeyFromSecret, signBody } from '@escrow-settlement/protocol/keys';
import {
  encodeBase64Json,
  fromAtomicAmount,
  X402_SCHEME,
  type PaymentAuthorization,
  type PaymentPayload,
  type PaymentPayloadV2,
  type PaymentRequiredV2,
  type PaymentRequirements,
  type PaymentRequirementsV2,
  type ProofSandboxPayload,
} from '@escrow-settlement/protocol/x402';

export * from '@escrow-settlement/protocol/x402';

export interface PaymentOptions {
  /** Amount to pay, decimal (default: the offer's price). */
  value?: string;
  /** 64 hex characters (default: 32 random bytes). A nonce settles once. */
  nonce?: string;
  /** Timestamp after which the authorization is void (default: now + maxTimeoutSeconds). */
  validBefore?: string;
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
