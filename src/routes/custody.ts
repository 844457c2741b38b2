// Custody routes: the journal entry and the retry that settles it exactly once (docs/protocol.md §4.4).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { getCustody, retryCustody } from '../escrow/custodyJournal.ts';

export const custodyRoutes = () =>
  defineRoutes([
    {
      method: 'GET',
      path: '/v1/escrows/:id/custody',
      access: 'key',
      rate: 'key',
      tenant: 'escrow',
      tag: 'custody',
      summary: "The custody journal entry of the escrow's settlement; 404 before any settlement was attempted.",
      success: {
        status: 200,
        description:
          '{escrowId, status: pending|settle-failed|confirmed, outcome, payerAmount, payeeAmount, attempts, lastError?, reference, createdAt, updatedAt}',
      },
      errors: ['unauthorized', 'not_found', 'rate_limited'],
      handler: async ({ params, svc }) => json(await getCustody(svc, params.id)),
    },
    {
      method: 'POST',
      path: '/v1/escrows/:id/custody/retry',
      access: 'key',
      rate: 'key',
      tenant: 'escrow',
      tag: 'custody',
      summary: 'Retry a failed settlement. Idempotent: an already confirmed settlement returns its proof without touching custody.',
      success: { status: 200, description: 'Proof' },
      errors: ['unauthorized', 'not_found', 'invalid_state', 'custody_failed', 'rate_limited'],
      handler: async ({ params, svc }) => json(await retryCustody(svc, params.id)),
    },
  ]);
