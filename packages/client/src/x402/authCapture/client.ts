// The payer's side of auth-capture for @x402/core's x402Client (the service's x402 documentation):
// `new x402Client().register('escrow:*', new AuthCaptureClient(secretKey))`. It signs the collect
// authorization, binding the resource URL and the hash of the terms the resource server offered.
import type {
  PaymentPayloadContext,
  PaymentPayloadResult,
  PaymentRequirements,
  SchemeClientHooks,
  SchemeNetworkClient,
} from '@x402/core/types';
import { publicKeyFromSecret } from '@escrow-settlement/protocol/keys';
import { AUTH_CAPTURE_SCHEME, boundExtra, ESCROW_DECIMALS, signCollect } from './wire.ts';

export interface AuthCaptureClientOptions {
  /** Sign only offers whose terms this accepts (compare termsHash(terms) with ones you trust); default: any terms. */
  acceptTerms?: (terms: unknown) => boolean;
}

export class AuthCaptureClient implements SchemeNetworkClient {
  readonly scheme = AUTH_CAPTURE_SCHEME;
  /**
   * The resource URL of the offer a requirement came from. x402Client hands the scheme only the
   * chosen requirements; its before-creation hook sees the whole offer with the same object.
   */
  private readonly resources = new WeakMap<object, string>();
  readonly schemeHooks: SchemeClientHooks = {
    onBeforePaymentCreation: async (ctx) => {
      this.resources.set(ctx.selectedRequirements, ctx.paymentRequired.resource.url);
    },
  };

  constructor(
    private readonly secretKey: string,
    private readonly opts: AuthCaptureClientOptions = {},
  ) {
    publicKeyFromSecret(secretKey);
  }

  /** USDC on an escrow: network counts as a USD asset for x402Client's spend controls. */
  readonly findDefaultAsset = (asset: string, network: string) =>
    asset === 'USDC' && network.startsWith('escrow:') ? { asset, decimals: ESCROW_DECIMALS, symbol: 'USDC' } : undefined;

  async createPaymentPayload(
    x402Version: number,
    requirements: PaymentRequirements,
    context?: PaymentPayloadContext,
  ): Promise<PaymentPayloadResult> {
    const extra = requirements.extra ?? {};
    if (extra.paymentFlow !== 'escrow') throw new TypeError('auth-capture requirements must carry extra.paymentFlow "escrow"');
    if (extra.terms === undefined)
      throw new TypeError('auth-capture requirements must carry extra.terms: the terms the delivery is checked against');
    if (this.opts.acceptTerms && !this.opts.acceptTerms(extra.terms)) throw new Error("the offer's terms were refused by acceptTerms");
    if (context?.maxAmountPerPayment !== undefined && BigInt(requirements.amount) > BigInt(context.maxAmountPerPayment)) {
      throw new Error(`amount ${requirements.amount} is over the spend cap ${context.maxAmountPerPayment}`);
    }
    const resource = this.resources.get(requirements) ?? (typeof extra.resource === 'string' ? extra.resource : undefined);
    if (resource === undefined)
      throw new TypeError('the resource URL is unknown: create the payment through x402Client (or put it in extra.resource)');
    const payload = signCollect(this.secretKey, {
      to: requirements.payTo,
      value: requirements.amount,
      asset: requirements.asset,
      resource,
      terms: extra.terms,
      maxTimeoutSeconds: requirements.maxTimeoutSeconds,
      // The fee bounds and deadlines offered, when there are any: the payer's signature covers them.
      bound: boundExtra(extra),
    });
    return { x402Version, payload: payload as unknown as Record<string, unknown> };
  }
}
