// Mandate routes (docs/protocol.md §8).
import { object } from 'superstruct';
import { defineRoutes, readById } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { check, hex64, requiredJson, SignatureS } from '../validate.ts';
import { validateMandateCaps } from '../mandate/mandateCaps.ts';
import { getMandate, registerMandate } from '../mandate/mandates.ts';
import { claimMandate } from '../access/tenancy.ts';

export const MandateBody = object({ principal: hex64, caps: requiredJson('MandateCaps'), signature: SignatureS });

export const mandateRoutes = defineRoutes({ tag: 'mandates', access: 'key', rate: 'key' }, [
  {
    route: 'POST /v1/mandates',
    summary: 'Register a principal-signed mandate; idempotent by content hash (201 new, 200 existing with usage intact).',
    body: MandateBody,
    success: { status: 201, description: 'Mandate with hash and usage (200 when already registered)' },
    errors: ['bad_request', 'unauthorized', 'mandate_violation', 'payload_too_large', 'rate_limited'],
    async handler({ request, svc, caller }) {
      const b = check(await readJson(request), MandateBody);
      const caps = validateMandateCaps(b.caps);
      const r = await registerMandate(svc, { principal: b.principal, caps, signature: b.signature });
      // Tenancy: a minted key may use the mandates it registered (idempotent, so a retry repairs it).
      await claimMandate(svc.db, caller, r.mandate.id);
      return json(r.mandate, r.created ? 201 : 200);
    },
  },
  {
    ...readById('/v1/mandates/:id', 'Read a mandate with its hash and usage {spent, remaining}.', 'Mandate', getMandate),
    tenant: 'mandate',
  },
]);
