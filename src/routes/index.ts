// Every route the service serves, in one list: the router, auth, rate limits and OpenAPI read it.
import type { RouteDef } from '../http/route.ts';
import { metaRoutes } from './meta.ts';
import { agentRoutes } from './agents.ts';
import { escrowRoutes } from './escrows.ts';
import { mandateRoutes } from './mandates.ts';
import { proofRoutes } from './proofs.ts';
import { disputeRoutes } from './disputes.ts';
import { custodyRoutes } from './custody.ts';
import { sandboxRoutes } from './sandbox.ts';
import { logRoutes } from './log.ts';
import { tileRoutes } from './tiles.ts';
import { witnessRoutes } from './witness.ts';
import { verifyRoutes } from './verify.ts';
import { adminRoutes } from './admin.ts';
import { webhookRoutes } from './webhooks.ts';
import { x402Routes } from './x402.ts';
import { consoleRoutes } from './console.ts';
import { webhookAttemptRoutes } from './webhookAttempts.ts';
import { mcpRoutes } from '../mcp/route.ts';
import { facilitatorRoutes } from './facilitator.ts';
import { ap2Routes } from './ap2.ts';

export function allRoutes(): RouteDef[] {
  return [
    ...metaRoutes,
    ...agentRoutes,
    ...mandateRoutes,
    ...escrowRoutes,
    ...ap2Routes,
    ...disputeRoutes,
    ...custodyRoutes,
    ...sandboxRoutes,
    ...proofRoutes,
    ...logRoutes,
    ...tileRoutes,
    ...witnessRoutes,
    ...verifyRoutes,
    ...adminRoutes,
    ...webhookRoutes,
    ...x402Routes,
    ...facilitatorRoutes,
    ...webhookAttemptRoutes,
    ...mcpRoutes,
    ...consoleRoutes,
  ];
}
