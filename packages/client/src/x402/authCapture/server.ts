// The resource server's side of auth-capture for @x402/core's x402ResourceServer (the service's
// x402 documentation): requirements from a price and the terms, then the escrow flow core runs: collect
// before the handler, capture after it with the handler's response as the payee-signed delivery,
// and void when the handler fails.
import type {
  AssetAmount,
  Network,
  PaymentPayload,
  PaymentRequirements,
  Price,
  SchemeNetworkServer,
  SchemeServerHooks,
  SettleContext,
  SettleResponse,
  SupportedKind,
  VerifiedPaymentCanceledContext,
} from '@x402/core/types';
import { publicKeyFromSecret, signBody } from '@escrow-settlement/protocol/keys';
import { toAtomicAmount } from '../../x402.ts';
import type { Terms } from '@escrow-settlement/protocol/resources';
import type { Timeouts } from './types.ts';
import { AUTH_CAPTURE_SCHEME, boundExtra, ESCROW_DECIMALS, ESCROW_SANDBOX, signCapture, signRefund, type BoundExtra } from './wire.ts';

export interface AuthCaptureServerOptions {
  /** The payee's secret key (hex): it signs captures and voids; its public key is `payTo`. */
  payeeSecretKey: string;
  /** Terms for routes whose payment option carries none in extra.terms. */
  terms?: Terms;
  timeouts?: Timeouts;
  arbiter?: string;
  asset?: string;
  /**
   * The fee each capture takes, in basis points within the offer's minFeeBps..maxFeeBps (absent:
   * minFeeBps): a number, or a function of the capture's requirements and the handler's response.
   */
  feeBps?: number | ((c: { requirements: PaymentRequirements; responseBody?: Uint8Array }) => number | undefined);
}

/** What a refund after release needs: the payment's requirements (as offered), its id and the amount. */
export interface AuthCaptureRefund {
  requirements: PaymentRequirements;
  paymentId: string;
  /** Atomic units of what the payee was paid. */
  amount: string;
  reason?: string;
  /** The resource URL of the payment (paymentPayload.resource.url), when known. */
  resource?: string;
}

/**
 * A route's payment option. `minFeeBps`/`maxFeeBps`/`feeRecipient` bound the fee a capture may take;
 * `captureDeadline`/`refundDeadline` are absolute (ISO 8601 or Date) and replace the relative
 * delivery timeout. The payer's authorization binds each one given.
 */
export interface AuthCaptureOption extends Omit<BoundExtra, 'captureDeadline' | 'refundDeadline'> {
  price: Price;
  terms?: Terms;
  network?: Network;
  maxTimeoutSeconds?: number;
  timeouts?: Timeouts;
  captureDeadline?: string | Date;
  refundDeadline?: string | Date;
}

type Authorization = { nonce?: unknown; to?: unknown };

export class AuthCaptureServer implements SchemeNetworkServer {
  readonly scheme = AUTH_CAPTURE_SCHEME;
  readonly defaultAssetTransferMethod = 'default';
  readonly paymentFlows = { default: { supported: ['escrow'] as const, default: 'escrow' as const } };
  /** The payee's public key: every option's payTo. */
  readonly payTo: string;
  /** Escrow ids of collected payments by payTo and nonce, until their capture or void. */
  private readonly collected = new Map<string, string>();

  readonly schemeHooks: SchemeServerHooks = {
    onAfterSettle: async (ctx) => {
      const key = this.keyOf(ctx);
      if (key === undefined) return;
      const escrowId = (ctx.result.extra as { escrowId?: unknown } | undefined)?.escrowId;
      if (ctx.phase === 'before-handler' && typeof escrowId === 'string') this.collected.set(key, escrowId);
      else if (ctx.phase !== 'before-handler') this.collected.delete(key);
    },
    onSettleFailure: async (ctx) => {
      const key = this.keyOf(ctx);
      if (key !== undefined && ctx.phase !== 'before-handler') this.collected.delete(key);
    },
  };

  constructor(private readonly opts: AuthCaptureServerOptions) {
    this.payTo = publicKeyFromSecret(opts.payeeSecretKey, 'payeeSecretKey');
  }

  /** A route's payment option (x402HTTPResourceServer's `accepts`) paying this payee. */
  option(o: AuthCaptureOption) {
    const terms = o.terms ?? this.opts.terms;
    if (terms === undefined) throw new TypeError('auth-capture needs terms: pass them here or to the AuthCaptureServer');
    const timeouts = o.timeouts ?? this.opts.timeouts;
    const iso = (d: string | Date | undefined) => (d instanceof Date ? d.toISOString() : d);
    const bound = boundExtra({
      minFeeBps: o.minFeeBps,
      maxFeeBps: o.maxFeeBps,
      feeRecipient: o.feeRecipient,
      captureDeadline: iso(o.captureDeadline),
      refundDeadline: iso(o.refundDeadline),
    });
    return {
      scheme: AUTH_CAPTURE_SCHEME,
      network: o.network ?? ESCROW_SANDBOX,
      payTo: this.payTo,
      price: o.price,
      maxTimeoutSeconds: o.maxTimeoutSeconds ?? 300,
      extra: { terms, ...(timeouts ? { timeouts } : {}), ...bound },
    };
  }

  /** "$0.01", "0.01" or 0.01 → atomic units of the asset (6 decimals); an AssetAmount as given. */
  async parsePrice(price: Price, _network: Network): Promise<AssetAmount> {
    if (typeof price === 'object' && price !== null) return price;
    const text = typeof price === 'number' ? price.toFixed(ESCROW_DECIMALS).replace(/\.?0+$/, '') : price.trim().replace(/^\$/, '');
    return { amount: toAtomicAmount(text, ESCROW_DECIMALS), asset: this.opts.asset ?? 'USDC' };
  }

  getAssetDecimals(): number {
    return ESCROW_DECIMALS;
  }

  async enhancePaymentRequirements(
    requirements: PaymentRequirements,
    _kind: SupportedKind,
    _extensions: string[],
  ): Promise<PaymentRequirements> {
    const extra = { ...(requirements.extra ?? {}) };
    extra.terms ??= this.opts.terms;
    if (extra.terms === undefined)
      throw new TypeError('auth-capture needs terms: give the payment option extra.terms, or the AuthCaptureServer terms');
    if (extra.timeouts === undefined && this.opts.timeouts) extra.timeouts = this.opts.timeouts;
    if (this.opts.arbiter !== undefined) extra.arbiter ??= this.opts.arbiter;
    return { ...requirements, extra };
  }

  /**
   * What core adds to the payer's payload for each settle (it only adds, never replaces): nothing
   * for the collect; the handler's response as the signed delivery for the capture; the signed
   * void on cancel (its signature as payeeSignature, `signature` being the payer's).
   */
  enrichSettlementPayload = async (ctx: SettleContext): Promise<Record<string, unknown> | void> => {
    if (ctx.phase === 'before-handler') return;
    const key = this.keyOf(ctx);
    const escrowId = key === undefined ? undefined : this.collected.get(key);
    if (escrowId === undefined) throw new Error('auth-capture: no collected escrow for this payment (its collect did not succeed here)');
    if (ctx.phase === 'after-handler') {
      const body = (ctx.transportContext as { responseBody?: Uint8Array } | undefined)?.responseBody;
      // A settlement override lowered the amount: a partial capture, the rest goes back to the payer.
      const authorized = ctx.paymentPayload.accepted?.amount;
      const partial = authorized !== undefined && BigInt(ctx.requirements.amount) < BigInt(authorized);
      const fee = this.opts.feeBps;
      const feeBps = typeof fee === 'function' ? fee({ requirements: ctx.requirements, responseBody: body }) : fee;
      return {
        ...signCapture(this.opts.payeeSecretKey, {
          escrowId,
          payload: deliveryPayload(body),
          ...(partial ? { amount: ctx.requirements.amount } : {}),
          ...(feeBps !== undefined ? { feeBps } : {}),
        }),
      };
    }
    const signedAt = new Date().toISOString();
    return {
      type: 'void',
      paymentId: escrowId,
      signedAt,
      payeeSignature: signBody(this.opts.payeeSecretKey, { escrowId, action: 'void', signedAt }, 'payeeSecretKey'),
    };
  };

  /** Void a collected payment whose handler failed: settle once more, on the same requirements. */
  settleOnCancel(ctx: VerifiedPaymentCanceledContext): PaymentRequirements | void {
    const key = this.keyOf(ctx);
    if (key !== undefined && this.collected.has(key)) return ctx.requirements as PaymentRequirements;
  }

  /**
   * A refund after release as a facilitator settle: give both to the facilitator client's `settle`
   * (`facilitator.settle(r.paymentPayload, r.paymentRequirements)`). The payee signs it.
   */
  refundRequest(r: AuthCaptureRefund): { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements } {
    const payload = signRefund(this.opts.payeeSecretKey, { escrowId: r.paymentId, amount: r.amount, reason: r.reason });
    return {
      paymentPayload: {
        x402Version: 2,
        ...(r.resource !== undefined ? { resource: { url: r.resource } } : {}),
        accepted: r.requirements,
        payload: payload as unknown as Record<string, unknown>,
      } as PaymentPayload,
      paymentRequirements: r.requirements,
    };
  }

  /** Refunds `amount` of a captured payment through `facilitator` (an @x402/core FacilitatorClient). */
  async refund(
    facilitator: { settle(p: PaymentPayload, r: PaymentRequirements): Promise<SettleResponse> },
    r: AuthCaptureRefund,
  ): Promise<SettleResponse> {
    const { paymentPayload, paymentRequirements } = this.refundRequest(r);
    return facilitator.settle(paymentPayload, paymentRequirements);
  }

  private keyOf(ctx: SettleContext): string | undefined {
    const a = (ctx.paymentPayload.payload as { authorization?: Authorization }).authorization;
    return a && typeof a.nonce === 'string' ? `${ctx.requirements.payTo}:${a.nonce}` : undefined;
  }
}

/** The handler's response body as the delivery: its JSON value, or its text when it is not JSON. */
function deliveryPayload(body: Uint8Array | undefined): unknown {
  const text = body === undefined ? '' : new TextDecoder().decode(body);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
