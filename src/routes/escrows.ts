// Escrow routes: create, list, read, fund, deliver, refund, trail, events, proof (docs/protocol.md §3.2, §4.1).
import { any, array, object, optional, size } from 'superstruct';
import { defineRoutes, readById, type Ctx } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson, readNoBody } from '../http/body.ts';
import {
  amountStr,
  asset,
  boundedString,
  check,
  FeeS,
  idOf,
  timestamp,
  KeyRefS,
  requiredJson,
  SignatureS,
  TimeoutsS,
} from '../validate.ts';
import { withIdempotency } from '../http/idempotency.ts';
import { badRequest } from '../errors.ts';
import { parseAmount } from '../units/amounts.ts';
import { validateTerms } from '../terms/checks.ts';
import { createEscrow, DEFAULT_TIMEOUTS, fundEscrow, type PartyInput } from '../escrow/escrows.ts';
import { ESCROW_ORDERS, escrowCursorOf, listEscrows, streamAllEscrows, type EscrowFilter, type EscrowOrder } from '../escrow/escrowList.ts';
import { loadAgents } from '../access/agents.ts';
import { MetadataS, validateMetadata } from '../escrow/metadata.ts';
import { pageOf, pageQuery } from '../paging.ts';
import { getEscrow, readTrail, readTrailPage, toJson } from '../escrow/escrowRow.ts';
import { engineEvent } from '../webhooks/event.ts';
import { submitDelivery, type DeliveryInput } from '../escrow/deliver.ts';
import { refundEscrow } from '../escrow/refund.ts';
import { proofOfEscrow } from '../proof/proofs.ts';
import { firstBreak } from '@escrow-settlement/protocol/trail/chain';
import { assertOwnAgents, assertVisible, scopeOf } from '../access/tenancy.ts';
import { AP2_CHAIN_MAX, ap2Off } from '../mandate/ap2.ts';
import { refundAfterRelease, refundsOf, requestRefund, type MoneyAct, type RefundInput } from '../escrow/refundAfterRelease.ts';

const agentId = idOf('agt');
/** An AP2 v0.2 Payment Mandate chain, and the open Checkout Mandate its payment.reference names (docs/ap2.md). */
const Ap2S = object({ paymentMandate: boundedString(AP2_CHAIN_MAX, 1), checkoutMandate: optional(boundedString(AP2_CHAIN_MAX, 1)) });
export const CreateEscrowBody = object({
  amount: amountStr,
  asset,
  terms: requiredJson('Terms'),
  payer: optional(KeyRefS),
  payee: optional(KeyRefS),
  payerAgentId: optional(agentId),
  payeeAgentId: optional(agentId),
  arbiter: optional(KeyRefS),
  arbiterAgentId: optional(agentId),
  mandateId: optional(idOf('mnd')),
  ap2: optional(Ap2S),
  timeouts: optional(TimeoutsS),
  fee: optional(FeeS),
  metadata: optional(MetadataS),
});
/** `amount`: a partial capture (docs/protocol.md §24.2), at most the escrow's amount; absent: all of it. */
export const SandboxDeliveryBody = object({ agentId, payload: any(), amount: optional(amountStr) });
export const SignedDeliveryBody = object({ payload: any(), submittedAt: timestamp, signature: SignatureS, amount: optional(amountStr) });
/** A refund after release or a refund request (docs/protocol.md §24.4, §24.5): sandbox form (one held agent signs) or client-signed. */
export const RefundSandboxBody = object({ amount: amountStr, reason: optional(boundedString(4000)), agentIds: size(array(agentId), 1, 1) });
export const RefundSignedBody = object({
  amount: amountStr,
  reason: optional(boundedString(4000)),
  signedAt: timestamp,
  signature: SignatureS,
});

function refundInput(raw: unknown): RefundInput {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw badRequest('request body must be a JSON object');
  const sandbox = 'agentIds' in raw;
  const b = sandbox ? check(raw, RefundSandboxBody) : check(raw, RefundSignedBody);
  const act: MoneyAct =
    'agentIds' in b ? { form: 'sandbox', agentId: b.agentIds[0] } : { form: 'client', signedAt: b.signedAt, signature: b.signature };
  return { amount: parseAmount(b.amount, 'amount'), reason: b.reason ?? '', act };
}

const STATES = ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'] as const;

function party(
  role: 'payer' | 'payee' | 'arbiter',
  keyRef: { publicKey: string; label?: string } | undefined,
  id: string | undefined,
  required: boolean,
): PartyInput | undefined {
  if (keyRef && id) throw badRequest(`give either ${role} or ${role}AgentId, not both`);
  if (keyRef) return { keyRef: { publicKey: keyRef.publicKey, ...(keyRef.label !== undefined ? { label: keyRef.label } : {}) } };
  if (id) return { agentId: id };
  if (required) throw badRequest(`${role} is required: give ${role} (a KeyRef) or ${role}AgentId (a sandbox agent)`);
  return undefined;
}

function deliveryInput(body: unknown): DeliveryInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('request body must be a JSON object');
  if (!('payload' in body)) throw badRequest('payload is required');
  if ('agentId' in body) {
    const b = check(body, SandboxDeliveryBody);
    return {
      form: 'sandbox',
      agentId: b.agentId,
      payload: b.payload,
      ...(b.amount !== undefined ? { amount: parseAmount(b.amount, 'amount') } : {}),
    };
  }
  const b = check(body, SignedDeliveryBody);
  return {
    form: 'client',
    payload: b.payload,
    submittedAt: b.submittedAt,
    signature: b.signature,
    ...(b.amount !== undefined ? { amount: parseAmount(b.amount, 'amount') } : {}),
  };
}

const id = (ctx: Ctx) => ctx.params.id;

/**
 * An escrow's fee (docs/protocol.md §24.1). Chain custody pays two legs (payer, payee), so a fee other
 * than 0 bps is refused there rather than paid to nobody.
 */
function feeOf(svc: Ctx['svc'], fee: { bps: number; recipient: string }) {
  if (fee.bps > 0 && svc.custody.kind !== 'simulated')
    throw badRequest(`fee: this service's ${svc.custody.kind} custody pays the payer and the payee only; a fee needs simulated custody`);
  return { bps: fee.bps, recipient: fee.recipient };
}

/** The `ap2` member with what it is checked against; 400 when AP2 is off or a mandateId is given too. */
function ap2Of(svc: Ctx['svc'], ap2: { paymentMandate: string; checkoutMandate?: string }, mandateId: string | undefined) {
  if (!svc.ap2) throw ap2Off('ap2');
  if (mandateId !== undefined) throw badRequest('give mandateId or ap2, not both: an escrow has one authority');
  return { input: ap2, trust: svc.ap2 };
}

/**
 * An ISO 8601 date-time query value (docs/protocol.md §2.5) that is a real calendar instant: Date.parse rolls
 * 2026-02-30 over to March, and year 0000 is out of Postgres's range, so both are 400s here.
 */
function dateParam(raw: string, name: string): Date {
  const at = new Date(check(raw, timestamp, name));
  const [y, m, d] = raw.slice(0, 10).split('-').map(Number);
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
  if (y < 1 || d > days) {
    throw badRequest(`${name} is not a calendar date-time: ${JSON.stringify(raw.slice(0, 40))}`);
  }
  return at;
}

/** The list's filters from the query; a bad value is a 400 naming its parameter, an unknown agent a 404. */
/** `?order=` of the escrow list (docs/protocol.md §9.3): oldest (the default) or newest. */
function orderParam(raw: string | null): EscrowOrder | undefined {
  if (raw === null) return undefined;
  if (!(ESCROW_ORDERS as readonly string[]).includes(raw)) throw badRequest(`order must be one of ${ESCROW_ORDERS.join(', ')}`);
  return raw as EscrowOrder;
}

async function escrowFilter(svc: Ctx['svc'], query: URLSearchParams, caller: Ctx['caller']): Promise<EscrowFilter> {
  const f: EscrowFilter = {};
  const tenant = scopeOf(caller);
  if (tenant !== null) f.tenant = tenant;
  const state = query.get('state');
  if (state !== null) {
    if (!(STATES as readonly string[]).includes(state)) throw badRequest(`state must be one of ${STATES.join(', ')}`);
    f.state = state as EscrowFilter['state'];
  }
  for (const name of ['createdAfter', 'createdBefore'] as const) {
    const raw = query.get(name);
    if (raw !== null) f[name] = dateParam(raw, name);
  }
  const agent = query.get('agentId');
  if (agent !== null) {
    // A confined key filters only by its own agents: another key's agent is 404, as if it did not exist.
    await assertOwnAgents(svc.db, caller, [['agentId', check(agent, agentId, 'agentId')]]);
    f.partyKey = (await loadAgents(svc.db, [agent], 'agentId'))[0].publicKey;
  }
  return f;
}

export const escrowRoutes = defineRoutes({ tag: 'escrows', access: 'key', rate: 'key' }, [
  {
    route: 'POST /v1/escrows',
    summary:
      'Create an escrow between a payer and a payee (sandbox agent ids or KeyRefs), optionally under a mandate (mandateId, or an AP2 Payment Mandate chain: ap2, docs/ap2.md) and with an arbiter.',
    body: CreateEscrowBody,
    success: { status: 201, description: 'Escrow (state created); emits escrow.created. Honors Idempotency-Key.' },
    errors: [
      'bad_request',
      'unauthorized',
      'mandate_violation',
      'not_found',
      'replayed',
      'unprocessable',
      'payload_too_large',
      'rate_limited',
    ],
    async handler(ctx) {
      const raw = await readJson(ctx.request);
      const b = check(raw, CreateEscrowBody);
      const input = {
        amount: parseAmount(b.amount, 'amount'),
        asset: b.asset,
        terms: validateTerms(b.terms),
        payer: party('payer', b.payer, b.payerAgentId, true)!,
        payee: party('payee', b.payee, b.payeeAgentId, true)!,
        arbiter: party('arbiter', b.arbiter, b.arbiterAgentId, false),
        mandateId: b.mandateId,
        ap2: b.ap2 === undefined ? undefined : ap2Of(ctx.svc, b.ap2, b.mandateId),
        timeouts: { ...DEFAULT_TIMEOUTS, ...(b.timeouts ?? {}) },
        ...(b.fee !== undefined ? { fee: feeOf(ctx.svc, b.fee) } : {}),
        scope: scopeOf(ctx.caller),
        metadata: b.metadata === undefined ? undefined : validateMetadata(b.metadata),
      };
      if (b.mandateId !== undefined) await assertVisible(ctx.svc.db, ctx.caller, 'mandate', b.mandateId, 'mandateId');
      return withIdempotency(ctx, raw, async (slot) => json(await createEscrow(ctx.svc, input, slot), 201));
    },
  },
  {
    route: 'GET /v1/escrows',
    summary:
      'List escrows in creation order (?order=newest: newest first). Without limit: every escrow. With ?limit= (1-1000): a page and nextCursor; ?cursor= continues in the same order. Filters: ?state=, ?agentId= (payer or payee), ?createdAfter= / ?createdBefore= (ISO 8601, strict bounds).',
    success: { status: 200, description: '{escrows: [Escrow], nextCursor: string|null}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'rate_limited'],
    async handler({ query, svc, caller }) {
      const order = orderParam(query.get('order'));
      const page = pageQuery(query, escrowCursorOf(order), ['state', 'agentId', 'createdAfter', 'createdBefore', 'order']);
      const filter = await escrowFilter(svc, query, caller);
      if (order !== undefined) filter.order = order;
      if (page.limit === undefined) {
        return new Response(await streamAllEscrows(svc, filter, page.after), {
          headers: { 'content-type': 'application/json; charset=utf-8' },
        });
      }
      return json(await listEscrows(svc, filter, page.after, page.limit));
    },
  },
  {
    ...readById('/v1/escrows/:id', 'Read one escrow.', 'Escrow', async (svc, id) => {
      const e = await getEscrow(svc.db, id);
      const view = toJson(e);
      // The refunds after release, once a closing opened the window (docs/protocol.md §24.4).
      return e.refundDeadline || e.refunded > 0n ? { ...view, refunds: await refundsOf(svc.db, id) } : view;
    }),
    tenant: 'escrow',
  },
  {
    route: 'POST /v1/escrows/:id/refunds',
    tenant: 'escrow',
    signsAgainstNow: true,
    summary:
      'Refund after release: money back from the payee to the payer, before the refund deadline and within the payee\'s net payout. Signed by the payee or the arbiter: client form {amount, reason?, signedAt, signature} over JCS {escrowId, action: "refund", amount, reason, signedAt} (reason "" when absent), or sandbox {amount, reason?, agentIds: [id]}.',
    body: [RefundSandboxBody, RefundSignedBody],
    success: {
      status: 201,
      description:
        '{refund: {id, amount, reason, by, at}, proof: Proof} (the adjustment proof, outcome refunded-after-release); emits refund.issued then proof.issued. A repeat of (signer, signedAt, amount) answers the first outcome. Honors Idempotency-Key.',
    },
    errors: [
      'bad_request',
      'unauthorized',
      'unauthorized_ruling',
      'not_found',
      'invalid_state',
      'unprocessable',
      'payload_too_large',
      'custody_failed',
      'rate_limited',
    ],
    async handler(ctx) {
      const raw = await readJson(ctx.request);
      const input = refundInput(raw);
      if (input.act.form === 'sandbox') await assertOwnAgents(ctx.svc.db, ctx.caller, [['agentIds', input.act.agentId]]);
      ctx.serviceSigned = input.act.form === 'sandbox';
      return withIdempotency(ctx, raw, async (slot) => {
        const { created: _c, ...out } = await refundAfterRelease(ctx.svc, id(ctx), input, slot);
        return json(out, 201);
      });
    },
  },
  {
    route: 'POST /v1/escrows/:id/refund-requests',
    tenant: 'escrow',
    signsAgainstNow: true,
    summary:
      'The payer asks for a refund within the refund window: client form {amount, reason?, signedAt, signature} over JCS {escrowId, action: "refund.request", amount, reason, signedAt}, or sandbox {amount, reason?, agentIds: [id]}. Recorded; no money moves.',
    body: [RefundSandboxBody, RefundSignedBody],
    success: {
      status: 201,
      description:
        '{refundRequest: {id, amount, reason, by, at}}; emits refund.requested. A repeat of (signer, signedAt, amount) answers the first. Honors Idempotency-Key.',
    },
    errors: [
      'bad_request',
      'unauthorized',
      'unauthorized_ruling',
      'not_found',
      'invalid_state',
      'unprocessable',
      'payload_too_large',
      'rate_limited',
    ],
    async handler(ctx) {
      const raw = await readJson(ctx.request);
      const input = refundInput(raw);
      if (input.act.form === 'sandbox') await assertOwnAgents(ctx.svc.db, ctx.caller, [['agentIds', input.act.agentId]]);
      ctx.serviceSigned = input.act.form === 'sandbox';
      return withIdempotency(ctx, raw, async (slot) => {
        const { created: _c, ...out } = await requestRefund(ctx.svc, id(ctx), input, slot);
        return json(out, 201);
      });
    },
  },
  {
    route: 'POST /v1/escrows/:id/fund',
    tenant: 'escrow',
    summary:
      'Fund a created escrow: custody locks the amount (simulated, or on chain with CUSTODY=chain); stamps the delivery deadline into deadlineAt.',
    success: { status: 200, description: 'Escrow (state funded, deadlineAt set); emits escrow.funded. Honors Idempotency-Key.' },
    // custody_failed: chain custody (CUSTODY=chain) could not lock the amount; the escrow stays created.
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'unprocessable', 'rate_limited', 'custody_failed'],
    async handler(ctx) {
      const raw = await readNoBody(ctx.request, 'fund');
      return withIdempotency(ctx, raw, async (slot) => json(await fundEscrow(ctx.svc, id(ctx), slot)));
    },
  },
  {
    route: 'POST /v1/escrows/:id/delivery',
    tenant: 'escrow',
    signsAgainstNow: true,
    summary:
      'Submit the delivery: sandbox form {agentId, payload} (the held payee key signs) or client-signed form {payload, submittedAt, signature}. Verified synchronously; a passing verdict settles and returns the proof.',
    body: [SandboxDeliveryBody, SignedDeliveryBody],
    success: { status: 201, description: 'DeliveryResult {delivery, verdict, proof?}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'unprocessable', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      const input = deliveryInput(await readJson(ctx.request));
      if (input.form === 'sandbox') await assertOwnAgents(ctx.svc.db, ctx.caller, [['agentId', input.agentId]]);
      ctx.serviceSigned = input.form === 'sandbox';
      return json(await submitDelivery(ctx.svc, id(ctx), input), 201);
    },
  },
  {
    route: 'POST /v1/escrows/:id/refund',
    tenant: 'escrow',
    summary: 'Refund a funded escrow, or a delivered one whose verdict failed.',
    success: { status: 200, description: 'Proof (outcome refunded); emits escrow.refunded then proof.issued' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'payload_too_large', 'custody_failed', 'rate_limited'],
    async handler(ctx) {
      await readNoBody(ctx.request, 'refund');
      return json(await refundEscrow(ctx.svc, id(ctx)));
    },
  },
  {
    route: 'GET /v1/escrows/:id/trail',
    tenant: 'escrow',
    summary:
      "The escrow's hash-chained evidence trail; intactUpTo is null when it verifies end to end, else the first broken index. With ?limit= (1-1000): a page of entries and nextCursor (intactUpTo still describes the whole chain); ?cursor= continues.",
    success: {
      status: 200,
      description: '{entries: [TrailEntry], intactUpTo: integer|null, nextCursor?: string|null} (nextCursor with limit)',
    },
    errors: ['bad_request', 'unauthorized', 'not_found', 'rate_limited'],
    async handler(ctx) {
      const q = pageQuery(ctx.query, 'trl');
      await getEscrow(ctx.svc.db, id(ctx));
      // The chain is checked whole on every page: a break before the page would otherwise go unseen.
      const all = await readTrail(ctx.svc.db, id(ctx));
      const intactUpTo = firstBreak(all);
      if (q.limit === undefined && q.after === null) return json({ entries: all, intactUpTo });
      const rest = q.after === null ? all : all.filter((e) => e.index > Number(q.after));
      const { page, cursor } = pageOf(q.limit === undefined ? rest : rest.slice(0, q.limit + 1), q, 'trl', (e) => e.index);
      return json({ entries: page, intactUpTo, ...cursor });
    },
  },
  {
    route: 'GET /v1/escrows/:id/events',
    tenant: 'escrow',
    summary:
      "Every event the escrow emitted, in order, derived from the trail, exactly as webhooks receive them (with the escrow's metadata when it has some). With ?limit= (1-1000): a page and nextCursor; ?cursor= continues.",
    success: { status: 200, description: '{events: [EngineEvent], nextCursor?: string|null} (nextCursor with limit)' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'rate_limited'],
    async handler(ctx) {
      const q = pageQuery(ctx.query, 'evt');
      const escrow = await getEscrow(ctx.svc.db, id(ctx));
      const entries =
        q.limit === undefined && q.after === null
          ? await readTrail(ctx.svc.db, id(ctx))
          : await readTrailPage(ctx.svc.db, id(ctx), q.after, q.limit ?? 1_000_000);
      const { page, cursor } = pageOf(entries, q, 'evt', (e) => e.index);
      const events = page.map((e) => engineEvent(id(ctx), { event: e.event, at: e.at, body: e.body, metadata: escrow.metadata }));
      return json({ events, ...cursor });
    },
  },
  {
    ...readById('/v1/escrows/:id/proof', 'The proof that closed the escrow; 404 while the matter is open.', 'Proof', (svc, id) =>
      proofOfEscrow(svc.db, id),
    ),
    tenant: 'escrow',
  },
]);
