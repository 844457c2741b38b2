// GET /v1/webhooks/attempts: every webhook POST with its status and timing (the console's deliveries
// view and escrow page read it). Pages like GET /v1/escrows (docs/protocol.md §9.2).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { badRequest } from '../errors.ts';
import { listAttempts } from '../webhooks/attempts.ts';
import { scopeOf } from '../access/tenancy.ts';

const KNOWN = ['escrowId', 'limit', 'cursor'];

export const webhookAttemptRoutes = defineRoutes({ tag: 'webhooks', access: 'key', rate: 'key' }, [
  {
    route: 'GET /v1/webhooks/attempts',
    summary:
      "Webhook attempts newest first, each with its URL, event, attempt number, HTTP status or error, duration and outcome (delivered, retry, dead). ?escrowId= keeps one escrow's; ?limit= (1-1000) pages with nextCursor; without limit, all.",
    success: {
      status: 200,
      description: '{attempts: [{id, escrowId, index, event, url, attempt, status?, error?, durationMs, outcome, at}], nextCursor?}',
    },
    errors: ['bad_request', 'unauthorized', 'rate_limited'],
    async handler({ query, svc, caller }) {
      const seen = new Set<string>();
      for (const k of query.keys()) {
        if (!KNOWN.includes(k)) throw badRequest(`${k} is not a known query parameter (${KNOWN.join(', ')})`);
        if (seen.has(k)) throw badRequest(`${k} is given more than once`);
        seen.add(k);
      }
      const escrowId = query.get('escrowId') ?? undefined;
      if (escrowId !== undefined && !/^esc_[0-9a-z]{26}$/.test(escrowId))
        throw badRequest('escrowId must be an escrow id (esc_ and 26 characters)');
      const limitRaw = query.get('limit');
      let limit: number | undefined;
      if (limitRaw !== null) {
        if (!/^\d{1,4}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > 1000)
          throw badRequest('limit must be a whole number from 1 to 1000');
        limit = Number(limitRaw);
      }
      return json(await listAttempts(svc.db, { escrowId, limit, cursor: query.get('cursor') ?? undefined, scope: scopeOf(caller) }));
    },
  },
]);
