// Proof routes: read one, and verify it against the published keys and the trail (docs/protocol.md §11.2).
import { defineRoutes, readById } from '../http/route.ts';
import { getProof, verifyStoredProof } from '../proof/proofs.ts';

export const proofRoutes = defineRoutes({ tag: 'proofs', access: 'key', rate: 'key', tenant: 'proof' }, [
  readById('/v1/proofs/:id', 'Read a settlement proof.', 'Proof', (svc, id) => getProof(svc.db, id)),
  readById(
    '/v1/proofs/:id/verify',
    'Check the issuer signature (the key must be a published era), full trail integrity, and that trailHead equals the trail at trailLength.',
    '{proofId, signatureValid, trailIntact, trailHeadMatches, issuer}',
    (svc, id) => verifyStoredProof(svc.db, id),
  ),
]);
