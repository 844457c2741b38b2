// Proof routes: read one, and verify it against the published keys and the trail (docs/protocol.md §11.2).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { getProof, verifyStoredProof } from '../proof/proofs.ts';

export const proofRoutes = () =>
  defineRoutes([
    {
      method: 'GET',
      path: '/v1/proofs/:id',
      access: 'key',
      rate: 'key',
      tenant: 'proof',
      tag: 'proofs',
      summary: 'Read a settlement proof.',
      success: { status: 200, description: 'Proof' },
      errors: ['unauthorized', 'not_found', 'rate_limited'],
      handler: async ({ params, svc }) => json(await getProof(svc.db, params.id)),
    },
    {
      method: 'GET',
      path: '/v1/proofs/:id/verify',
      access: 'key',
      rate: 'key',
      tenant: 'proof',
      tag: 'proofs',
      summary:
        'Check the issuer signature (the key must be a published era), full trail integrity, and that trailHead equals the trail at trailLength.',
      success: { status: 200, description: '{proofId, signatureValid, trailIntact, trailHeadMatches, issuer}' },
      errors: ['unauthorized', 'not_found', 'rate_limited'],
      handler: async ({ params, svc }) => json(await verifyStoredProof(svc.db, params.id)),
    },
  ]);
