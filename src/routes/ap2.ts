// AP2 routes: the challenge an agent's closed mandate must carry (docs/ap2.md §2) and the Payment Receipt of a closed AP2 matter (§7).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readNoBody } from '../http/body.ts';
import { scopeOf } from '../access/tenancy.ts';
import { ap2Off, issueChallenge } from '../mandate/ap2.ts';
import { ap2Receipt } from '../mandate/ap2Receipt.ts';

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
  {
    route: 'GET /v1/escrows/:id/ap2-receipt',
    tenant: 'escrow',
    summary:
      "The AP2 v0.2 Payment Receipt of an AP2 escrow that closed: a JWT ES256-signed by the receipt key the issuer document lists under ap2ReceiptKeys (kid), its reference the closed mandate's hash in sd_hash form; status Success when released, Error (refunded, or split) otherwise.",
    success: { status: 200, description: '{receipt: compact JWS, claims: the receipt payload, kid}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'rate_limited'],
    async handler({ svc, params }) {
      if (!svc.ap2 || !svc.ap2Receipt) throw ap2Off('GET /v1/escrows/{id}/ap2-receipt');
      return json(await ap2Receipt(svc.db, svc.ap2Receipt, svc.ap2.pisp?.domain_name ?? svc.config.publicUrl, params.id));
    },
  },
]);
