// Every route the service serves, in one list: the router, auth, rate limits and OpenAPI read it.
import type { RouteDef } from '../http/route.ts';
import { metaRoutes } from './meta.ts';
import { agentRoutes } from './agents.ts';

export function allRoutes(): RouteDef[] {
  return [...metaRoutes(), ...agentRoutes()];
}
