// Escrow routes: create, list, read, fund, deliver, refund, trail, events, proof (SPEC part 4, Escrows).
import { any, object, optional, unknown } from 'superstruct';
import { defineRoutes, type Ctx } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { amountStr, asset, check, idOf, timestamp } from '../http/validate.ts';
import { withIdempotency } from '../http/idempotency.ts';
import { badRequest } from '../errors.ts';
import { parseAmount } from '../units/amounts.ts';
import { validateTerms } from '../domain/checks.ts';
import { createEscrow, DEFAULT_TIMEOUTS, fundEscrow, listEscrows, streamAllEscrows, type PartyInput } from '../domain/escrows.ts';
import { getEscrow, readTrail, toJson } from '../domain/escrowRow.ts';
import { submitDelivery, type DeliveryInput } from '../domain/deliver.ts';
import { refundEscrow } from '../domain/refund.ts';
import { proofOfEscrow } from '../domain/proofs.ts';
import { firstBreak } from '../trail/chain.ts';
import { KeyRefS, SignatureS, TimeoutsS } from './schemas.ts';

const agentId = idOf('agt');
export const CreateEscrowBody = object({
  amount: amountStr,
  asset,
  terms: unknown(),
  payer: optional(KeyRefS),
  payee: optional(KeyRefS),
  payerAgentId: optional(agentId),
  payeeAgentId: optional(agentId),
  arbiter: optional(KeyRefS),
  arbiterAgentId: optional(agentId),
  mandateId: optional(idOf('mnd')),
  timeouts: optional(TimeoutsS),
});
export const SandboxDeliveryBody = object({ agentId, payload: any() });
export const SignedDeliveryBody = object({ payload: any(), submittedAt: timestamp, signature: SignatureS });
const STATES = ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'] as const;

function party(role: 'payer' | 'payee' | 'arbiter', keyRef: { publicKey: string; label?: string } | undefined, id: string | undefined, required: boolean): PartyInput | undefined {
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
    return { form: 'sandbox', agentId: b.agentId, payload: b.payload };
  }
  const b = check(body, SignedDeliveryBody);
  return { form: 'client', payload: b.payload, submittedAt: b.submittedAt, signature: b.signature };
}

const id = (ctx: Ctx) => ctx.params.id;

export const escrowRoutes = () => defineRoutes([
  {
    method: 'POST', path: '/v1/escrows', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'Create an escrow between a payer and a payee (sandbox agent ids or KeyRefs), optionally under a mandate and with an arbiter.',
    body: CreateEscrowBody,
    success: { status: 201, description: 'Escrow (state created); emits escrow.created. Honors Idempotency-Key.' },
    errors: ['bad_request', 'unauthorized', 'mandate_violation', 'not_found', 'unprocessable', 'payload_too_large', 'rate_limited'],
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
        timeouts: { ...DEFAULT_TIMEOUTS, ...(b.timeouts ?? {}) },
      };
      return withIdempotency(ctx, raw, async (slot) => json(await createEscrow(ctx.svc, input, slot), 201));
    },
  },
  {
    method: 'GET', path: '/v1/escrows', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'List escrows in creation order. Without limit: every escrow. With ?limit= (1-1000): a page and nextCursor; ?state= filters; ?cursor= continues.',
    success: { status: 200, description: '{escrows: [Escrow], nextCursor: string|null}' },
    errors: ['bad_request', 'unauthorized', 'rate_limited'],
    async handler({ query, svc }) {
      for (const k of query.keys()) if (!['state', 'limit', 'cursor'].includes(k)) throw badRequest(`${k} is not a known query parameter (state, limit, cursor)`);
      const state = query.get('state') ?? undefined;
      if (state !== undefined && !(STATES as readonly string[]).includes(state)) throw badRequest(`state must be one of ${STATES.join(', ')}`);
      const limitRaw = query.get('limit');
      let limit: number | undefined;
      if (limitRaw !== null) {
        if (!/^\d{1,4}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > 1000) throw badRequest('limit must be a whole number from 1 to 1000');
        limit = Number(limitRaw);
      }
      const q = { state: state as (typeof STATES)[number] | undefined, cursor: query.get('cursor') ?? undefined };
      // A cursor is validated before the stream starts, so a bad one is still a 400.
      if (limit === undefined) {
        if (q.cursor !== undefined) await listEscrows(svc, { ...q, limit: 1 });
        return new Response(await streamAllEscrows(svc, q), { headers: { 'content-type': 'application/json; charset=utf-8' } });
      }
      return json(await listEscrows(svc, { ...q, limit }));
    },
  },
  {
    method: 'GET', path: '/v1/escrows/:id', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'Read one escrow.',
    success: { status: 200, description: 'Escrow' },
    errors: ['unauthorized', 'not_found', 'rate_limited'],
    handler: async (ctx) => json(toJson(await getEscrow(ctx.svc.db, id(ctx)))),
  },
  {
    method: 'POST', path: '/v1/escrows/:id/fund', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'Fund a created escrow: custody locks the amount (simulated, or on chain with CUSTODY=chain); stamps the delivery deadline into deadlineAt.',
    success: { status: 200, description: 'Escrow (state funded, deadlineAt set); emits escrow.funded. Honors Idempotency-Key.' },
    // custody_failed: chain custody (CUSTODY=chain) could not lock the amount; the escrow stays created.
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'unprocessable', 'rate_limited', 'custody_failed'],
    async handler(ctx) {
      const raw = await readJson(ctx.request);
      if (raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw) || Object.keys(raw).length > 0)) {
        throw badRequest('fund takes no body fields');
      }
      return withIdempotency(ctx, raw, async (slot) => json(await fundEscrow(ctx.svc, id(ctx), slot)));
    },
  },
  {
    method: 'POST', path: '/v1/escrows/:id/delivery', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'Submit the delivery: sandbox form {agentId, payload} (the held payee key signs) or client-signed form {payload, submittedAt, signature}. Verified synchronously; a passing verdict settles and returns the proof.',
    body: [SandboxDeliveryBody, SignedDeliveryBody],
    success: { status: 201, description: 'DeliveryResult {delivery, verdict, proof?}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'unprocessable', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      const input = deliveryInput(await readJson(ctx.request));
      return json(await submitDelivery(ctx.svc, id(ctx), input), 201);
    },
  },
  {
    method: 'POST', path: '/v1/escrows/:id/refund', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'Refund a funded escrow, or a delivered one whose verdict failed.',
    success: { status: 200, description: 'Proof (outcome refunded); emits escrow.refunded then proof.issued' },
    errors: ['unauthorized', 'not_found', 'invalid_state', 'custody_failed', 'rate_limited'],
    async handler(ctx) {
      const raw = await readJson(ctx.request);
      if (raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw) || Object.keys(raw).length > 0)) {
        throw badRequest('refund takes no body fields');
      }
      return json(await refundEscrow(ctx.svc, id(ctx)));
    },
  },
  {
    method: 'GET', path: '/v1/escrows/:id/trail', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'The escrow\'s hash-chained evidence trail; intactUpTo is null when it verifies end to end, else the first broken index.',
    success: { status: 200, description: '{entries: [TrailEntry], intactUpTo: integer|null}' },
    errors: ['unauthorized', 'not_found', 'rate_limited'],
    async handler(ctx) {
      await getEscrow(ctx.svc.db, id(ctx));
      const entries = await readTrail(ctx.svc.db, id(ctx));
      return json({ entries, intactUpTo: firstBreak(entries) });
    },
  },
  {
    method: 'GET', path: '/v1/escrows/:id/events', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'Every event the escrow emitted, in order, derived from the trail, exactly as webhooks receive them.',
    success: { status: 200, description: '{events: [EngineEvent]}' },
    errors: ['unauthorized', 'not_found', 'rate_limited'],
    async handler(ctx) {
      await getEscrow(ctx.svc.db, id(ctx));
      const entries = await readTrail(ctx.svc.db, id(ctx));
      return json({ events: entries.map((e) => ({ event: e.event, escrowId: id(ctx), at: e.at, data: e.body })) });
    },
  },
  {
    method: 'GET', path: '/v1/escrows/:id/proof', access: 'key', rate: 'key', tag: 'escrows',
    summary: 'The proof that closed the escrow; 404 while the matter is open.',
    success: { status: 200, description: 'Proof' },
    errors: ['unauthorized', 'not_found', 'rate_limited'],
    handler: async (ctx) => json(await proofOfEscrow(ctx.svc.db, id(ctx))),
  },
]);


