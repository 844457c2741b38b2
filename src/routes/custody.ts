// Custody routes: the journal entry and the retry that settles it exactly once (docs/protocol.md §4.4).
import { defineRoutes, readById } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { getCustody, retryCustody } from '../escrow/custodyJournal.ts';

export const custodyRoutes = defineRoutes({ tag: 'custody', access: 'key', rate: 'key', tenant: 'escrow' }, [
  readById(
    '/v1/escrows/:id/custody',
    "The custody journal entry of the escrow's settlement; 404 before any settlement was attempted.",
    '{escrowId, status: pending|settle-failed|confirmed, outcome, payerAmount, payeeAmount, attempts, lastError?, reference, createdAt, updatedAt}',
    getCustody,
  ),
  {
    route: 'POST /v1/escrows/:id/custody/retry',
    summary: 'Retry a failed settlement. Idempotent: an already confirmed settlement returns its proof without touching custody.',
    success: { status: 200, description: 'Proof' },
    errors: ['unauthorized', 'not_found', 'invalid_state', 'custody_failed', 'rate_limited'],
    handler: async ({ params, svc }) => json(await retryCustody(svc, params.id)),
  },
]);
