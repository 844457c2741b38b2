// The three facilitator calls as x402 answers (docs/x402.md): a Refusal becomes `isValid: false` /
// `success: false` with status 200; the service's error envelope is left for bodies that are not
// facilitator requests (checked by the route) and for the service's own failures.
import type { Services } from '../../services.ts';
import type { Caller } from '../../http/route.ts';
import { activeKey } from '../../proof/keys.ts';
import { isHex64 } from '@escrow-settlement/protocol/crypto/bytes';
import { Refusal, refuse } from './refusal.ts';
import { checkRequest } from './requirements.ts';
import { settleCollect, verifyCollect } from './collect.ts';
import { settleCapture, settleRefund, settleVoid } from './capture.ts';
import { ASSETS, DECIMALS, PAYMENT_FLOW, SCHEME, settleKind } from './wire.ts';

type Body = { x402Version: number; paymentPayload: Record<string, unknown>; paymentRequirements: Record<string, unknown> };

export async function supported(svc: Services) {
  const issuer = await activeKey(svc.db, 'issuer');
  return {
    kinds: [
      {
        x402Version: 2,
        scheme: SCHEME,
        network: svc.config.x402Network,
        extra: { paymentFlow: PAYMENT_FLOW, decimals: DECIMALS, assets: [...ASSETS] },
      },
    ],
    extensions: [],
    signers: { 'escrow:*': [issuer.publicKey] },
  };
}

/** Who pays, as far as the payload says: the collect's `from`, riding along or not. */
function payerOf(body: Body): string | undefined {
  const from = ((body.paymentPayload.payload as Record<string, unknown> | undefined)?.authorization as Record<string, unknown> | undefined)
    ?.from;
  return isHex64(from) ? from : undefined;
}

export async function verify(svc: Services, caller: Caller, body: Body) {
  const payer = payerOf(body);
  try {
    const c = checkRequest(body, svc.config.x402Network);
    const kind = settleKind(c.payload);
    if (kind.kind !== 'collect')
      throw refuse(
        'malformed_header',
        `paymentPayload.payload.type ${kind.kind}: verify checks a collect authorization; capture, void and refund are settled directly`,
      );
    await verifyCollect(svc, caller, c, kind.body);
    return { isValid: true, payer: kind.body.authorization.from };
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return { isValid: false, invalidReason: err.code, invalidMessage: err.message, ...(payer ? { payer } : {}) };
  }
}

export async function settle(svc: Services, caller: Caller, body: Body) {
  const payer = payerOf(body);
  const network = svc.config.x402Network;
  try {
    const c = checkRequest(body, network);
    const kind = settleKind(c.payload);
    if (kind.kind === 'collect') return await settleCollect(svc, caller, c, kind.body);
    if (kind.kind === 'capture') return await settleCapture(svc, caller, c, kind.body);
    if (kind.kind === 'refund') return await settleRefund(svc, caller, c, kind.body);
    return await settleVoid(svc, caller, c, kind.body);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return { success: false, errorReason: err.code, errorMessage: err.message, transaction: '', network, ...(payer ? { payer } : {}) };
  }
}
