// Dispute routes: open, read, evidence, resolve (docs/protocol.md §6).
import { any, array, enums, object, optional, size, unknown } from 'superstruct';
import { defineRoutes, readById } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { boundedString, check, hex64, idOf, timestamp, SignatureS } from '../validate.ts';
import { badRequest } from '../errors.ts';
import { addEvidence, getDispute, openDispute, resolveDispute } from '../dispute/disputes.ts';
import type { PartyAct } from '../escrow/partySignatures.ts';
import { withIdempotency } from '../http/idempotency.ts';
import { assertOwnAgents } from '../access/tenancy.ts';

const text4k = boundedString(4000);
const agentId = idOf('agt');
export const OpenSandboxBody = object({ agentId, reason: optional(text4k) });
export const OpenSignedBody = object({ party: hex64, reason: optional(text4k), signedAt: timestamp, signature: SignatureS });
export const EvidenceSandboxBody = object({ agentId, note: optional(text4k), payload: optional(any()) });
export const EvidenceSignedBody = object({
  party: hex64,
  note: optional(text4k),
  payload: optional(any()),
  signedAt: timestamp,
  signature: SignatureS,
});
export const ResolveBody = object({
  outcome: enums(['release', 'refund', 'split']),
  rationale: optional(text4k),
  signatures: optional(size(array(SignatureS), 0, 10)),
  agentIds: optional(size(array(agentId), 0, 10)),
  shares: optional(unknown()),
});

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** Sandbox form when agentId is given, client-signed form otherwise. */
function partyAct(b: { agentId?: string; party?: string; signedAt?: string; signature?: { signer: string; signature: string } }): PartyAct {
  return b.agentId !== undefined
    ? { form: 'sandbox', agentId: b.agentId }
    : { form: 'client', party: b.party!, signedAt: b.signedAt!, signature: b.signature! };
}

export const disputeRoutes = defineRoutes({ tag: 'disputes', access: 'key', rate: 'key', tenant: 'escrow' }, [
  {
    route: 'POST /v1/escrows/:id/dispute',
    signsAgainstNow: true,
    summary:
      'Open the dispute of a delivered escrow whose verdict failed: sandbox form {agentId, reason?} or client-signed form {party, reason?, signedAt, signature} over JCS {escrowId, action: "dispute.open", reason?, signedAt}.',
    body: [OpenSandboxBody, OpenSignedBody],
    success: {
      status: 201,
      description:
        'Dispute (state open); the escrow becomes disputed with deadlineAt = now + decideWithinSeconds; emits dispute.opened. Honors Idempotency-Key. Header x-service-now: the clock signedAt is checked against.',
    },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'replayed', 'unprocessable', 'rate_limited'],
    async handler(ctx) {
      const raw = asObject(await readJson(ctx.request));
      const b = 'agentId' in raw ? check(raw, OpenSandboxBody) : check(raw, OpenSignedBody);
      await assertOwnAgents(ctx.svc.db, ctx.caller, [['agentId', 'agentId' in b ? b.agentId : undefined]]);
      return withIdempotency(ctx, raw, async (slot) =>
        json(await openDispute(ctx.svc, ctx.params.id, partyAct(b), b.reason ?? '', slot), 201),
      );
    },
  },
  readById('/v1/escrows/:id/dispute', "Read the escrow's dispute.", 'Dispute', getDispute),
  {
    route: 'POST /v1/escrows/:id/dispute/evidence',
    signsAgainstNow: true,
    summary:
      'Add evidence, recorded by content hash (of payload, or of the note when no payload): sandbox form {agentId, note?, payload?} or client-signed {party, note?, payload?, signedAt, signature} over JCS {escrowId, action: "dispute.evidence", note?, contentHash?, signedAt}. The counterparty\'s first evidence moves the dispute to under-review.',
    body: [EvidenceSandboxBody, EvidenceSignedBody],
    success: {
      status: 200,
      description:
        'Dispute with the evidence recorded; emits dispute.evidence. The same signed evidence again: 409 replayed. Honors Idempotency-Key. Header x-service-now: the clock signedAt is checked against.',
    },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'replayed', 'unprocessable', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      const raw = asObject(await readJson(ctx.request));
      const b = 'agentId' in raw ? check(raw, EvidenceSandboxBody) : check(raw, EvidenceSignedBody);
      const hasPayload = 'payload' in raw;
      if (!hasPayload && b.note === undefined) throw badRequest('evidence needs a note or a payload');
      await assertOwnAgents(ctx.svc.db, ctx.caller, [['agentId', 'agentId' in b ? b.agentId : undefined]]);
      return withIdempotency(ctx, raw, async (slot) =>
        json(await addEvidence(ctx.svc, ctx.params.id, partyAct(b), b.note, raw.payload, hasPayload, slot)),
      );
    },
  },
  {
    route: 'POST /v1/escrows/:id/dispute/resolve',
    summary:
      'Record a ruling signed by both parties or by the named arbiter (client signatures and/or held agentIds over JCS {escrowId, disputeId, outcome, rationale, shares?}); the matter closes in a proof.',
    body: ResolveBody,
    success: {
      status: 200,
      description:
        '{dispute, proof}; emits dispute.resolved and proof.issued. The same signed ruling again: 409 replayed. Honors Idempotency-Key.',
    },
    errors: [
      'bad_request',
      'unauthorized',
      'unauthorized_ruling',
      'not_found',
      'invalid_state',
      'replayed',
      'custody_failed',
      'rate_limited',
    ],
    async handler(ctx) {
      const raw = asObject(await readJson(ctx.request));
      const b = check(raw, ResolveBody);
      await assertOwnAgents(
        ctx.svc.db,
        ctx.caller,
        (b.agentIds ?? []).map((a, i): [string, string] => [b.agentIds!.length > 1 ? `agentIds[${i}]` : 'agentIds', a]),
      );
      return withIdempotency(ctx, raw, async (slot) =>
        json(await resolveDispute(ctx.svc, ctx.params.id, { ...b, shares: b.shares as never }, slot)),
      );
    },
  },
]);
