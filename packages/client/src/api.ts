// The typed API client: one method per route of the service, over any fetch. Web APIs only.
import type {
  Bundle,
  ConsistencyProof,
  Inclusion,
  IssuerKey,
  Proof,
  SignedHead,
  TrailEntry,
  WitnessState,
} from '@escrow-settlement/protocol/types';
import type { EngineEvent } from '@escrow-settlement/protocol/webhook';
import type {
  Agent,
  ApiKeyRecord,
  Ap2Challenge,
  CreateEscrowInput,
  CustodyEntry,
  Refund,
  RefundInput,
  DeadLetter,
  DeliveryResult,
  Dispute,
  DocumentVerification,
  Escrow,
  EscrowListQuery,
  EscrowPage,
  PageQuery,
  EvidenceInput,
  Health,
  Mandate,
  MintedKey,
  OpenDisputeInput,
  ProofVerification,
  RateSnapshot,
  ResolveInput,
  SandboxDelivery,
  SignedDelivery,
  SignedDisputeEvidence,
  SignedDisputeOpen,
  SignedMandate,
  WebhookAttempt,
  WebhookEndpoint,
} from '@escrow-settlement/protocol/resources';
import {
  signCapture,
  signVoid,
  type CapturePayload,
  type FacilitatorPaymentStatus,
  type FacilitatorRequest,
  type FacilitatorSettleResponse,
  type FacilitatorSupported,
  type FacilitatorVerifyResponse,
  type VoidPayload,
} from './x402/authCapture/wire.ts';
import { ServiceClock } from './clock.ts';
import { ApiError, createTransport, type CallInput, type ClientOptions } from './http.ts';
import { signDelivery, signDisputeAction, signRefund, type DeliveryToSign, type DisputeActionToSign, type RefundToSign } from './sign.ts';
import {
  createPaymentHeader,
  createPaymentHeaderV2,
  decodePaymentRequired,
  decodePaymentResponse,
  X402_HEADERS,
  type PaymentOptions,
  type PaymentRequired,
  type PaymentRequiredV2,
  type PaymentRequirements,
  type PaymentResponse,
} from './x402.ts';

/**
 * Which route each client method calls, as "METHOD /path" in the service's own route table. The
 * methods below read their route from here, and a test compares this table with the routes the
 * service serves, so a route without a method (or a method without a route) fails the build.
 */
export const API_ROUTES = {
  health: ['GET /health'],
  issuerKeys: ['GET /.well-known/proof-issuer.json'],
  openapi: ['GET /v1/openapi.json'],
  errorsPage: ['GET /docs/errors'],
  'agents.create': ['POST /v1/agents'],
  'mandates.create': ['POST /v1/mandates'],
  'mandates.get': ['GET /v1/mandates/:id'],
  'escrows.create': ['POST /v1/escrows'],
  'ap2.challenge': ['POST /v1/ap2/challenge'],
  'ap2.receipt': ['GET /v1/escrows/:id/ap2-receipt'],
  'escrows.list': ['GET /v1/escrows'],
  'escrows.get': ['GET /v1/escrows/:id'],
  'escrows.fund': ['POST /v1/escrows/:id/fund'],
  'escrows.deliver': ['POST /v1/escrows/:id/delivery'],
  'escrows.refund': ['POST /v1/escrows/:id/refund'],
  'refunds.create': ['POST /v1/escrows/:id/refunds'],
  'refundRequests.create': ['POST /v1/escrows/:id/refund-requests'],
  'escrows.trail': ['GET /v1/escrows/:id/trail'],
  'escrows.events': ['GET /v1/escrows/:id/events'],
  'escrows.proof': ['GET /v1/escrows/:id/proof'],
  'escrows.custody': ['GET /v1/escrows/:id/custody'],
  'escrows.retryCustody': ['POST /v1/escrows/:id/custody/retry'],
  'disputes.open': ['POST /v1/escrows/:id/dispute'],
  'disputes.get': ['GET /v1/escrows/:id/dispute'],
  'disputes.addEvidence': ['POST /v1/escrows/:id/dispute/evidence'],
  'disputes.resolve': ['POST /v1/escrows/:id/dispute/resolve'],
  'proofs.get': ['GET /v1/proofs/:id'],
  'proofs.verify': ['GET /v1/proofs/:id/verify'],
  'proofs.bundle': ['GET /v1/proofs/:id/bundle'],
  verify: ['POST /v1/verify'],
  'log.head': ['GET /v1/log/head'],
  'log.inclusion': ['GET /v1/log/proof/:proofId'],
  'log.consistency': ['GET /v1/log/consistency/:firstSize', 'GET /v1/log/consistency/:firstSize/:secondSize'],
  'log.entries': ['GET /v1/log/entries'],
  'log.checkpoint': ['GET /v1/log/checkpoint'],
  'log.tile': ['GET /v1/log/tile/:tile+'],
  'log.witnesses': ['GET /v1/log/witnesses'],
  'log.policy': ['GET /.well-known/tlog-policy'],
  'webhooks.register': ['POST /v1/webhooks'],
  'webhooks.list': ['GET /v1/webhooks'],
  'webhooks.unregister': ['DELETE /v1/webhooks'],
  'webhooks.enable': ['POST /v1/webhooks/enable'],
  'webhooks.deadLetters': ['GET /v1/webhooks/dead-letters'],
  'webhooks.redeliver': ['POST /v1/webhooks/dead-letters/:id/redeliver'],
  'webhooks.attempts': ['GET /v1/webhooks/attempts'],
  'admin.rotateIssuer': ['POST /v1/admin/issuer/rotate'],
  'admin.rotateWebhookKey': ['POST /v1/admin/webhooks/rotate-key'],
  'admin.createKey': ['POST /v1/admin/keys'],
  'admin.listKeys': ['GET /v1/admin/keys'],
  'admin.revokeKey': ['DELETE /v1/admin/keys/:keyId'],
  'admin.metrics': ['GET /v1/admin/metrics'],
  'admin.rate': ['GET /v1/admin/rate'],
  'sandbox.advanceClock': ['POST /v1/sandbox/clock'],
  'sandbox.clock': ['GET /v1/sandbox/clock'],
  'sandbox.failNext': ['POST /v1/sandbox/custody/fail-next'],
  'x402.offer': ['GET /v1/x402/demo'],
  'x402.demo': ['GET /v1/x402/demo'],
  'x402.pay': ['GET /v1/x402/demo'],
  'x402.facilitator.supported': ['GET /v1/x402/facilitator/supported'],
  'x402.facilitator.verify': ['POST /v1/x402/facilitator/verify'],
  'x402.facilitator.settle': ['POST /v1/x402/facilitator/settle'],
  'x402.facilitator.payment': ['GET /v1/x402/facilitator/payments/:paymentId'],
} as const satisfies Record<string, readonly string[]>;

type MethodName = keyof typeof API_ROUTES;

/** Idempotency-Key on create and fund: a retry with the same key replays the first answer. */
export interface IdempotencyOption {
  idempotencyKey?: string;
}

export interface PaidResource<T = unknown> {
  resource: T;
  /** X-PAYMENT-RESPONSE / PAYMENT-RESPONSE, decoded: the escrow and proof that settled the payment. */
  payment: PaymentResponse;
}

export type ApiClient = ReturnType<typeof createClient>;

/**
 * A client for one deployment. Every method resolves to the parsed success body and rejects with an
 * ApiError carrying the envelope's code, message and docsUrl, the status and the x-request-id.
 * `fetch` may be any `(Request) => Promise<Response>`, e.g. `(req) => app.fetch(req)` in-process.
 */
/**
 * A tile's bytes. Named so the declarations say `Uint8Array` and not TypeScript 5.7's
 * `Uint8Array<ArrayBufferLike>`, which older compilers (5.0-5.6) cannot read.
 */
export type TileBytes = Uint8Array;

/** A webhook signing key era (the issuer document's `webhookKeys`). */
export interface WebhookKey {
  keyId: string;
  alg: 'ed25519';
  publicKey: string;
  validFrom: string;
  validUntil?: string;
}

export function createClient(opts: ClientOptions) {
  const clock = new ServiceClock();
  const transport = createTransport(opts, (serviceNow) => clock.observe(serviceNow));
  const call = async <T>(name: MethodName, input?: CallInput, which = 0): Promise<T> =>
    (await transport<T>(API_ROUTES[name][which], input)).data;
  let clockAsked = false;

  /**
   * The service's now for a client-signed time: local time plus the offset of the latest
   * x-service-now seen; before any, GET /v1/sandbox/clock is read once (a service without it leaves
   * the local clock).
   */
  async function serviceNow(): Promise<string> {
    if (clock.offsetMs === null && !clockAsked) {
      clockAsked = true;
      try {
        const at = Date.now();
        clock.observe((await call<{ now: string }>('sandbox.clock')).now, at);
      } catch {
        // No reading: sign with the local clock; the next answer's x-service-now corrects it.
      }
    }
    return clock.nowIso();
  }
  const idem = (o?: IdempotencyOption) => (o?.idempotencyKey !== undefined ? { 'idempotency-key': o.idempotencyKey } : undefined);
  const id = (v: string) => ({ id: v });

  async function demo<T = unknown>(payment?: { header: string; v2?: boolean }): Promise<PaidResource<T>> {
    const name = payment?.v2 ? X402_HEADERS.paymentV2 : X402_HEADERS.payment;
    const a = await transport<T>(API_ROUTES['x402.demo'][0], { headers: payment ? { [name]: payment.header } : undefined });
    // The settlement in the version the payment was made in (both headers are always sent).
    const [mine, other] = payment?.v2 ? [X402_HEADERS.responseV2, X402_HEADERS.response] : [X402_HEADERS.response, X402_HEADERS.responseV2];
    const answer = a.headers.get(mine) ?? a.headers.get(other);
    if (answer === null)
      throw new ApiError(a.status, 'http_200', 'the paid resource came without X-PAYMENT-RESPONSE / PAYMENT-RESPONSE', {
        headers: a.headers,
      });
    return { resource: a.data, payment: decodePaymentResponse(answer) };
  }

  /** The 402 without a payment: its v1 body and its x402 v2 PAYMENT-REQUIRED header, decoded. */
  async function unpaid(): Promise<{ v1: PaymentRequired; v2: PaymentRequiredV2 }> {
    try {
      await transport(API_ROUTES['x402.offer'][0]);
    } catch (err) {
      if (err instanceof ApiError && err.status === 402) {
        return { v1: err.body as PaymentRequired, v2: decodePaymentRequired(err.headers.get(X402_HEADERS.required) ?? '') };
      }
      throw err;
    }
    throw new ApiError(200, 'http_200', 'expected 402 Payment Required without a payment header');
  }

  /** The x402 v1 offer: the 402 body {x402Version: 1, accepts, error}. */
  const offer = async (): Promise<PaymentRequired> => (await unpaid()).v1;

  return {
    /**
     * The service's clock as this client knows it: `now()` is what the sign helpers below stamp,
     * `offsetMs()` the learned offset from local time (null before the first reading).
     */
    clock: { now: serviceNow, offsetMs: () => clock.offsetMs },
    /**
     * The package's signing helpers, stamping submittedAt / signedAt with the service's clock
     * (clock.now()) instead of the local one; a time the caller gives is kept.
     */
    sign: {
      delivery: async (payeeSecretKey: string, d: DeliveryToSign): Promise<SignedDelivery> =>
        signDelivery(payeeSecretKey, { ...d, submittedAt: d.submittedAt ?? (await serviceNow()) }),
      disputeAction: async <A extends DisputeActionToSign>(
        secretKey: string,
        a: A,
      ): Promise<A extends { action: 'dispute.open' } ? SignedDisputeOpen : SignedDisputeEvidence> =>
        signDisputeAction(secretKey, { ...a, signedAt: a.signedAt ?? (await serviceNow()) }) as never,
      capture: async (payeeSecretKey: string, c: { escrowId: string; payload: unknown; submittedAt?: string }): Promise<CapturePayload> =>
        signCapture(payeeSecretKey, { ...c, submittedAt: c.submittedAt ?? (await serviceNow()) }),
      void: async (payeeSecretKey: string, v: { escrowId: string; signedAt?: string }): Promise<VoidPayload> =>
        signVoid(payeeSecretKey, { ...v, signedAt: v.signedAt ?? (await serviceNow()) }),
      /** A refund after release, signed by the payee or the arbiter: the body of refunds.create. */
      refund: async (secretKey: string, r: RefundToSign) => signRefund(secretKey, { ...r, signedAt: r.signedAt ?? (await serviceNow()) }),
      /** A refund request, signed by the payer: the body of refundRequests.create. */
      refundRequest: async (payerSecretKey: string, r: RefundToSign) =>
        signRefund(payerSecretKey, { ...r, signedAt: r.signedAt ?? (await serviceNow()) }, 'refund.request'),
    },
    health: () => call<Health>('health'),
    issuerKeys: () => call<{ keys: IssuerKey[] }>('issuerKeys'),
    openapi: () => call<Record<string, unknown>>('openapi'),
    errorsPage: () => call<string>('errorsPage', { as: 'text' }),
    agents: {
      create: (body: { label?: string } = {}) => call<Agent>('agents.create', { body }),
    },
    mandates: {
      /** Body from signMandate. Resolves to the mandate, new (201) or already registered (200). */
      create: (body: SignedMandate) => call<Mandate>('mandates.create', { body }),
      get: (mandateId: string) => call<Mandate>('mandates.get', { params: id(mandateId) }),
    },
    ap2: {
      /** A single-use nonce (5 minutes) and the audience an AP2 closed Payment Mandate must name. */
      challenge: () => call<Ap2Challenge>('ap2.challenge'),
      /** The AP2 Payment Receipt of a closed AP2 escrow: the JWT, its claims and its key id. */
      receipt: (escrowId: string) =>
        call<{ receipt: string; claims: Record<string, unknown>; kid: string }>('ap2.receipt', { params: id(escrowId) }),
    },
    escrows: {
      create: (body: CreateEscrowInput, o?: IdempotencyOption) => call<Escrow>('escrows.create', { body, headers: idem(o) }),
      list: (q: EscrowListQuery = {}) => call<EscrowPage>('escrows.list', { query: q }),
      get: (escrowId: string) => call<Escrow>('escrows.get', { params: id(escrowId) }),
      fund: (escrowId: string, o?: IdempotencyOption) => call<Escrow>('escrows.fund', { params: id(escrowId), headers: idem(o) }),
      /** Sandbox form {agentId, payload}, or the client-signed form from signDelivery. */
      deliver: (escrowId: string, body: SandboxDelivery | SignedDelivery) =>
        call<DeliveryResult>('escrows.deliver', { params: id(escrowId), body }),
      refund: (escrowId: string) => call<Proof>('escrows.refund', { params: id(escrowId) }),
      trail: (escrowId: string, q: PageQuery = {}) =>
        call<{ entries: TrailEntry[]; intactUpTo: number | null; nextCursor?: string | null }>('escrows.trail', {
          params: id(escrowId),
          query: q,
        }),
      events: (escrowId: string, q: PageQuery = {}) =>
        call<{ events: EngineEvent[]; nextCursor?: string | null }>('escrows.events', { params: id(escrowId), query: q }),
      proof: (escrowId: string) => call<Proof>('escrows.proof', { params: id(escrowId) }),
      custody: (escrowId: string) => call<CustodyEntry>('escrows.custody', { params: id(escrowId) }),
      retryCustody: (escrowId: string) => call<Proof>('escrows.retryCustody', { params: id(escrowId) }),
    },
    /** Refunds after release (the payee's or the arbiter's): 201 {refund, proof}, the adjustment proof. */
    refunds: {
      create: (escrowId: string, body: RefundInput, o?: IdempotencyOption) =>
        call<{ refund: Refund; proof: Proof }>('refunds.create', { params: id(escrowId), body, headers: idem(o) }),
    },
    /** The payer's refund requests: recorded, no money moves. */
    refundRequests: {
      create: (escrowId: string, body: RefundInput, o?: IdempotencyOption) =>
        call<{ refundRequest: Refund }>('refundRequests.create', { params: id(escrowId), body, headers: idem(o) }),
    },
    disputes: {
      /** Sandbox form {agentId, reason?}, or the client-signed form from signDisputeAction (action dispute.open). */
      open: (escrowId: string, body: OpenDisputeInput) => call<Dispute>('disputes.open', { params: id(escrowId), body }),
      get: (escrowId: string) => call<Dispute>('disputes.get', { params: id(escrowId) }),
      addEvidence: (escrowId: string, body: EvidenceInput) => call<Dispute>('disputes.addEvidence', { params: id(escrowId), body }),
      /** signatures from signRuling, and/or agentIds of held sandbox agents. */
      resolve: (escrowId: string, body: ResolveInput) =>
        call<{ dispute: Dispute; proof: Proof }>('disputes.resolve', { params: id(escrowId), body }),
    },
    proofs: {
      get: (proofId: string) => call<Proof>('proofs.get', { params: id(proofId) }),
      verify: (proofId: string) => call<ProofVerification>('proofs.verify', { params: id(proofId) }),
      /** Everything to verify one matter offline with verifyBundle. */
      /** `{disclose: 'payload'}` adds the delivery's payload, so verifyBundle re-runs every check of the terms. */
      bundle: (proofId: string, q: { disclose?: 'payload' } = {}) => call<Bundle>('proofs.bundle', { params: id(proofId), query: q }),
    },
    /** POST /v1/verify: the service checks a proof document against its published key eras. */
    verify: (proof: Proof) => call<DocumentVerification>('verify', { body: proof }),
    log: {
      head: () => call<SignedHead>('log.head'),
      inclusion: (proofId: string) => call<Inclusion & { proofId: string }>('log.inclusion', { params: { proofId } }),
      /** Without secondSize: to the current size. Check it with verifyConsistency. */
      consistency: (firstSize: number, secondSize?: number) =>
        secondSize === undefined
          ? call<ConsistencyProof>('log.consistency', { params: { firstSize } }, 0)
          : call<ConsistencyProof>('log.consistency', { params: { firstSize, secondSize } }, 1),
      entries: (q: { start?: number; end?: number } = {}) =>
        call<{ entries: Array<{ leafIndex: number; proof: Proof }> }>('log.entries', { query: q }),
      /** C2SP tlog-checkpoint signed note (text). */
      checkpoint: () => call<string>('log.checkpoint', { as: 'text' }),
      /** A C2SP tlog-tiles tile or entry bundle by its path after `tile/` ("0/x001/234.p/7", "entries/000"); see tilePath. */
      tile: (path: string): Promise<TileBytes> => call<TileBytes>('log.tile', { params: { tile: path }, as: 'bytes' }),
      /** Each configured witness with the last size it cosigned (the service's witnessing documentation). */
      witnesses: () => call<{ quorum: number; witnesses: WitnessState[] }>('log.witnesses'),
      /** The C2SP tlog-policy file: log keys, witnesses, quorum (text). */
      policy: () => call<string>('log.policy', { as: 'text' }),
    },
    webhooks: {
      register: (url: string) =>
        call<{ ok: boolean; url: string; signingKey: string; standardWebhooks: { secret?: string; publicKey: string } }>(
          'webhooks.register',
          { body: { url } },
        ),
      list: (q: PageQuery = {}) =>
        call<{ webhooks: string[]; endpoints: WebhookEndpoint[]; signingKey: string; nextCursor?: string | null }>('webhooks.list', {
          query: q,
        }),
      unregister: (url: string) => call<{ ok: boolean; url: string }>('webhooks.unregister', { body: { url } }),
      /** Enables a disabled URL again (it failed every attempt for the deployment's WEBHOOK_DISABLE_AFTER_HOURS). */
      enable: (url: string) =>
        call<{ ok: boolean; url: string; disabled: false; wasDisabled: boolean }>('webhooks.enable', { body: { url } }),
      deadLetters: (q: PageQuery = {}) =>
        call<{ deadLetters: DeadLetter[]; nextCursor?: string | null }>('webhooks.deadLetters', { query: q }),
      redeliver: (deadLetterId: string) => call<{ ok: boolean; id: string }>('webhooks.redeliver', { params: id(deadLetterId) }),
      /** Every attempt newest first; ?escrowId keeps one escrow's, ?limit pages with nextCursor. */
      attempts: (q: { escrowId?: string; limit?: number; cursor?: string } = {}) =>
        call<{ attempts: WebhookAttempt[]; nextCursor?: string }>('webhooks.attempts', { query: q }),
    },
    admin: {
      /** `key`: the new issuer key's source as the service's ISSUER_KEY takes it (file:… or pkcs11:…); only a sandbox may omit it. */
      rotateIssuer: (body: { key?: string } = {}) => call<{ active: IssuerKey; retired: IssuerKey }>('admin.rotateIssuer', { body }),
      /** Rotates the webhook signing key; both keys sign every delivery until `overlapUntil` (the service's key documentation). */
      rotateWebhookKey: (body: { key?: string } = {}) =>
        call<{ active: WebhookKey; retired: WebhookKey; overlapUntil: string }>('admin.rotateWebhookKey', { body }),
      createKey: (body: { label?: string; rateLimitMax?: number } = {}) => call<MintedKey>('admin.createKey', { body }),
      listKeys: (q: PageQuery = {}) => call<{ keys: ApiKeyRecord[]; nextCursor?: string | null }>('admin.listKeys', { query: q }),
      revokeKey: (keyId: string) => call<ApiKeyRecord>('admin.revokeKey', { params: { keyId } }),
      metrics: () => call<Record<string, unknown>>('admin.metrics'),
      rate: () => call<RateSnapshot>('admin.rate'),
    },
    sandbox: {
      advanceClock: (advanceSeconds: number) =>
        call<{ now: string; offsetSeconds: number }>('sandbox.advanceClock', { body: { advanceSeconds } }),
      /** The service's notion of now, which client-signed signedAt/submittedAt are checked against. */
      clock: () => call<{ now: string; offsetSeconds: number }>('sandbox.clock'),
      failNext: (count: number) => call<{ failNext: number }>('sandbox.failNext', { body: { count } }),
    },
    x402: {
      offer,
      /** The x402 v2 offer: the decoded PAYMENT-REQUIRED header. */
      offerV2: async (): Promise<PaymentRequiredV2> => (await unpaid()).v2,
      /** GET the resource with a payment header (X-PAYMENT, or PAYMENT-SIGNATURE with v2). */
      demo,
      /** The whole x402 dance: read the offer, sign its first `accepts` with secretKey (v2: the PAYMENT-REQUIRED offer), pay. */
      async pay<T = unknown>(
        secretKey: string,
        o: PaymentOptions & { v2?: boolean } = {},
      ): Promise<PaidResource<T> & { requirements: PaymentRequirements }> {
        const { v1, v2 } = await unpaid();
        const requirements = v1.accepts[0];
        const header = o.v2 ? createPaymentHeaderV2(v2, secretKey, o) : createPaymentHeader(requirements, secretKey, o);
        const paid = await demo<T>({ header, v2: o.v2 });
        return { ...paid, requirements };
      },
      /** The x402 facilitator (the service's x402 documentation); @x402/core's HTTPFacilitatorClient speaks the same routes. */
      facilitator: {
        supported: () => call<FacilitatorSupported>('x402.facilitator.supported'),
        verify: (body: FacilitatorRequest) => call<FacilitatorVerifyResponse>('x402.facilitator.verify', { body }),
        settle: (body: FacilitatorRequest) => call<FacilitatorSettleResponse>('x402.facilitator.settle', { body }),
        /** A payment's settlement status by its paymentId: read it instead of settling again after a timeout. */
        payment: (paymentId: string) => call<FacilitatorPaymentStatus>('x402.facilitator.payment', { params: id(paymentId) }),
      },
    },
  };
}
