// The facilitator's wire shapes (docs/x402.md): the request body of /verify and /settle, the
// auth-capture requirements, and the three settle payloads (collect, capture, void). The body's
// outer shape is checked with the service's usual 400; everything inside it is an x402 matter, so
// a failure there is a refusal (malformed_header naming the field) answered with status 200.
import { any, define, literal, number, object, optional, record, string, type, union, unknown } from 'superstruct';
import { AppError } from '../../errors.ts';
import { annotate, check, hex64, idOf, sigHex, timestamp, SignatureS, TimeoutsS } from '../../validate.ts';
import { refuse } from './refusal.ts';

export const SCHEME = 'auth-capture';
export const PAYMENT_FLOW = 'escrow';
export const DECIMALS = 6;
/** Assets the facilitator holds in escrow; advertised in /supported. */
export const ASSETS = ['USDC'] as const;

/** POST /verify and /settle: x402's VerifyRequest / SettleRequest. Anything else is a 400. */
const jsonObject = (schema: string) =>
  annotate(
    define<Record<string, unknown>>(schema, (v) => (typeof v === 'object' && v !== null && !Array.isArray(v)) || 'must be a JSON object'),
    { $ref: `#/components/schemas/${schema}` },
  );
export const FacilitatorBody = object({
  x402Version: number(),
  paymentPayload: jsonObject('X402PaymentPayload'),
  paymentRequirements: jsonObject('AuthCaptureRequirements'),
});

/** x402 v2 PaymentRequirements for auth-capture; unknown keys are tolerated, as x402 adds them. */
export const RequirementsS = type({
  scheme: string(),
  network: string(),
  asset: string(),
  amount: string(),
  payTo: hex64,
  maxTimeoutSeconds: number(),
  extra: type({
    paymentFlow: string(),
    terms: any(),
    timeouts: optional(TimeoutsS),
    arbiter: optional(hex64),
    minFeeBps: optional(number()),
    maxFeeBps: optional(number()),
    feeRecipient: optional(hex64),
    captureDeadline: optional(timestamp),
    refundDeadline: optional(timestamp),
  }),
});

/**
 * The requirements' fields a payer's authorization binds when they are present (docs/x402.md
 * "Fees and deadlines"): the same names inside `authorization`, covered by its signature.
 */
export const BOUND_FIELDS = ['minFeeBps', 'maxFeeBps', 'feeRecipient', 'captureDeadline', 'refundDeadline'] as const;

export const PaymentPayloadS = type({
  x402Version: number(),
  resource: optional(type({ url: string() })),
  accepted: record(string(), unknown()),
  payload: record(string(), unknown()),
});

export const AuthorizationS = object({
  from: hex64,
  to: hex64,
  value: string(),
  asset: string(),
  resource: string(),
  termsHash: hex64,
  nonce: hex64,
  validBefore: timestamp,
  minFeeBps: optional(number()),
  maxFeeBps: optional(number()),
  feeRecipient: optional(hex64),
  captureDeadline: optional(timestamp),
  refundDeadline: optional(timestamp),
});

export const CollectS = object({ authorization: AuthorizationS, signature: sigHex });

/**
 * Capture and void. @x402/core adds a settle's fields to the payer's payload and never replaces
 * one, so the collect's `authorization` and `signature` may ride along; the void's payee signature
 * then travels as `payeeSignature` (docs/x402.md).
 */
export const CaptureS = object({
  type: literal('capture'),
  paymentId: idOf('esc'),
  delivery: object({ payload: any(), submittedAt: timestamp, signature: SignatureS }),
  /** A partial capture: atomic units, at most the authorized amount; absent: all of it. */
  amount: optional(string()),
  /** The fee this capture takes, within the authorization's bounds; absent: minFeeBps (0 without bounds). */
  feeBps: optional(number()),
  authorization: optional(AuthorizationS),
  signature: optional(sigHex),
});

export const VoidS = object({
  type: literal('void'),
  paymentId: idOf('esc'),
  signedAt: timestamp,
  signature: union([SignatureS, sigHex]),
  payeeSignature: optional(SignatureS),
  authorization: optional(AuthorizationS),
});

/** A refund after release, by payTo; like a void, its signature is payeeSignature when the collect's authorization rides along. */
export const RefundS = object({
  type: literal('refund'),
  paymentId: idOf('esc'),
  amount: string(),
  reason: optional(string()),
  signedAt: timestamp,
  signature: union([SignatureS, sigHex]),
  payeeSignature: optional(SignatureS),
  authorization: optional(AuthorizationS),
});

export type Requirements = ReturnType<typeof RequirementsS.create>;
export type Authorization = ReturnType<typeof AuthorizationS.create>;
export type Collect = ReturnType<typeof CollectS.create>;
export type Capture = ReturnType<typeof CaptureS.create>;
export type Void = ReturnType<typeof VoidS.create>;
export type Refund = ReturnType<typeof RefundS.create>;
export type Settle =
  | { kind: 'collect'; body: Collect }
  | { kind: 'capture'; body: Capture }
  | { kind: 'void'; body: Void }
  | { kind: 'refund'; body: Refund };

/** check() with the 400 turned into a malformed_header refusal naming the same field. */
export function shape<T>(value: unknown, struct: Parameters<typeof check<T>>[1], root: string): T {
  try {
    return check(value, struct, root);
  } catch (err) {
    if (err instanceof AppError) throw refuse('malformed_header', err.message);
    throw err;
  }
}

/** Which settle a payload asks for: a `type` of capture, void or refund, else a collect authorization. */
export function settleKind(payload: Record<string, unknown>): Settle {
  const root = 'paymentPayload.payload';
  if (payload.type === 'capture') return { kind: 'capture', body: shape(payload, CaptureS, root) };
  if (payload.type === 'void') return { kind: 'void', body: shape(payload, VoidS, root) };
  if (payload.type === 'refund') return { kind: 'refund', body: shape(payload, RefundS, root) };
  if (payload.type !== undefined)
    throw refuse(
      'malformed_header',
      `${root}.type must be capture, void or refund (or absent for a collect), got ${JSON.stringify(payload.type).slice(0, 40)}`,
    );
  return { kind: 'collect', body: shape(payload, CollectS, root) };
}
