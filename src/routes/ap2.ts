// AP2 routes: the challenge an agent's closed mandate must carry (docs/ap2.md §2).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readNoBody } from '../http/body.ts';
import { scopeOf } from '../access/tenancy.ts';
import { ap2Off, issueChallenge } from '../mandate/ap2.ts';

export const ap2Routes = defineRoutes({ tag: 'ap2', access: 'key', rate: 'key' }, [
  {
    route: 'POST /v1/ap2/challenge',
    summary:
      'Issue a single-use nonce (5 minutes) and the audience an AP2 closed Payment Mandate must name to be accepted by POST /v1/escrows (docs/ap2.md). 400 naming AP2_ISSUERS when AP2 is off.',
    success: { status: 201, description: '{nonce, audience, expiresAt}' },
    errors: ['bad_request', 'unauthorized', 'rate_limited'],
    async handler({ request, svc, caller }) {
      await readNoBody(request, 'POST /v1/ap2/challenge');
      if (!svc.ap2) throw ap2Off('POST /v1/ap2/challenge');
      return json(await issueChallenge(svc.db, svc.ap2.audience, scopeOf(caller)), 201);
    },
  },
]);
