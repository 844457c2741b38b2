// The x402 facilitator's part of the OpenAPI document (docs/x402.md): its request shapes and the
// answers of /supported, /verify and /settle, merged into the named schemas and responses.
import { bool, hex64, hexSig, int, obj, ref, str, ts } from './schemaParts.ts';
import { SETTLE_ONLY_CODES, X402_REFUSAL_CODES } from '../x402/facilitator/refusal.ts';
import { PAYMENT_STATUSES } from '../x402/facilitator/status.ts';
/** What /verify's invalidReason may name: the x402 refusals (a settle may also answer verdict_failed or custody_failed). */
const REFUSALS = [...X402_REFUSAL_CODES];
const bps = { type: 'integer', minimum: 0, maximum: 10000 };
/** Fee bounds and absolute deadlines: in the requirements, and bound by the authorization when present there. */
const BOUND = {
  minFeeBps: { ...bps, description: 'the lowest fee a capture may take, in basis points (with maxFeeBps)' },
  maxFeeBps: { ...bps, description: 'the highest fee a capture may take, in basis points (with minFeeBps)' },
  feeRecipient: { ...hex64, description: 'who receives the fee; required when maxFeeBps > 0' },
  captureDeadline: { ...ts, description: 'capture by then (the delivery deadline); replaces timeouts.deliverWithinSeconds' },
  refundDeadline: { ...ts, description: 'the end of the refund window; after captureDeadline' },
};
const atomic = { type: 'string', pattern: '^\\d{1,24}$', description: 'atomic units, 6 decimals' };

export const FACILITATOR_SCHEMAS: Record<string, unknown> = {
  AuthCaptureRequirements: {
    ...obj({
      scheme: { const: 'auth-capture' },
      network: { ...str, description: 'X402_NETWORK, a CAIP-2 id (default escrow:sandbox)' },
      asset: str,
      amount: { type: 'string', pattern: '^[1-9]\\d{0,23}$', description: 'atomic units, 6 decimals' },
      payTo: hex64,
      maxTimeoutSeconds: int,
      extra: obj(
        {
          paymentFlow: { const: 'escrow' },
          terms: ref('Terms'),
          timeouts: {
            type: 'object',
            properties: {
              deliverWithinSeconds: int,
              resolveWithinSeconds: int,
              decideWithinSeconds: int,
              timeoutRuling: { type: 'string', enum: ['release', 'refund', 'split'] },
            },
            additionalProperties: false,
          },
          arbiter: hex64,
          ...BOUND,
        },
        ['paymentFlow', 'terms'],
      ),
    }),
    description: 'x402 v2 PaymentRequirements of the auth-capture scheme; unknown keys are tolerated',
  },
  AuthCaptureCollect: obj({
    authorization: obj(
      { from: hex64, to: hex64, value: str, asset: str, resource: str, termsHash: hex64, nonce: hex64, validBefore: ts, ...BOUND },
      ['from', 'to', 'value', 'asset', 'resource', 'termsHash', 'nonce', 'validBefore'],
    ),
    signature: { ...hexSig, description: 'Ed25519 by authorization.from over JCS(authorization)' },
  }),
  AuthCaptureCapture: obj(
    {
      type: { const: 'capture' },
      paymentId: { type: 'string', pattern: '^esc_' },
      delivery: obj({ payload: { description: 'any JSON value' }, submittedAt: ts, signature: ref('Signature') }),
      amount: { ...atomic, description: 'a partial capture, at most the authorized amount; the delivery then signs it as the decimal' },
      feeBps: { ...bps, description: "within the authorization's minFeeBps..maxFeeBps; default minFeeBps" },
    },
    ['type', 'paymentId', 'delivery'],
  ),
  AuthCaptureRefund: obj(
    {
      type: { const: 'refund' },
      paymentId: { type: 'string', pattern: '^esc_' },
      amount: atomic,
      reason: str,
      signedAt: ts,
      signature: {
        oneOf: [ref('Signature'), hexSig],
        description:
          'by payTo over JCS {escrowId, action: "refund", amount (the decimal), reason ("" when absent), signedAt}; payeeSignature instead when the collect\'s authorization rides along',
      },
    },
    ['type', 'paymentId', 'amount', 'signedAt', 'signature'],
  ),
  AuthCaptureVoid: obj({
    type: { const: 'void' },
    paymentId: { type: 'string', pattern: '^esc_' },
    signedAt: ts,
    signature: {
      oneOf: [ref('Signature'), hexSig],
      description:
        'by payTo over JCS {escrowId, action: "void", signedAt}; payeeSignature instead when the collect\'s authorization rides along',
    },
  }),
  X402PaymentPayload: obj(
    {
      x402Version: { const: 2 },
      resource: obj({ url: str }, ['url']),
      accepted: ref('AuthCaptureRequirements'),
      payload: { oneOf: [ref('AuthCaptureCollect'), ref('AuthCaptureCapture'), ref('AuthCaptureVoid'), ref('AuthCaptureRefund')] },
    },
    ['x402Version', 'accepted', 'payload'],
  ),
};

const settleAnswer = obj(
  {
    success: bool,
    errorReason: { type: 'string', enum: [...REFUSALS, ...SETTLE_ONLY_CODES] },
    errorMessage: str,
    transaction: { ...str, description: 'collect: the escrow id; capture and void: the proof id; a refusal: ""' },
    network: str,
    payer: hex64,
    amount: str,
    extra: {
      type: 'object',
      properties: {
        escrowId: str,
        state: { type: 'string', enum: ['settled', 'refunded'] },
        verdict: { type: 'object' },
        refundedTotal: { ...atomic, description: 'a refund: the refunds after release so far, this one included' },
      },
    },
  },
  ['success', 'transaction', 'network'],
);

export const FACILITATOR_RESPONSES: Record<string, unknown> = {
  'GET /v1/x402/facilitator/supported': obj({
    kinds: {
      type: 'array',
      items: obj({
        x402Version: int,
        scheme: str,
        network: str,
        extra: obj({ paymentFlow: str, decimals: int, assets: { type: 'array', items: str } }),
      }),
    },
    extensions: { type: 'array', items: str },
    signers: { type: 'object', additionalProperties: { type: 'array', items: hex64 } },
  }),
  'POST /v1/x402/facilitator/verify': obj(
    { isValid: bool, invalidReason: { type: 'string', enum: REFUSALS }, invalidMessage: str, payer: hex64 },
    ['isValid'],
  ),
  'POST /v1/x402/facilitator/settle': settleAnswer,
  'GET /v1/x402/facilitator/payments/:paymentId': obj({
    paymentId: { type: 'string', pattern: '^esc_' },
    status: { type: 'string', enum: [...PAYMENT_STATUSES] },
    amounts: obj({ authorized: atomic, captured: atomic, refunded: atomic, fee: atomic }),
    proofs: { type: 'array', items: { type: 'string', pattern: '^prf_' } },
    captureDeadline: { type: ['string', 'null'], format: 'date-time' },
    refundDeadline: { type: ['string', 'null'], format: 'date-time' },
  }),
};
