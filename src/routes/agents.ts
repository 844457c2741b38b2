// Sandbox agents: keypairs the service generates and holds for testing (docs/protocol.md §3.1).
import { object, optional } from 'superstruct';
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { check, label } from '../validate.ts';
import { createAgent } from '../access/agents.ts';
import { scopeOf } from '../access/tenancy.ts';

export const CreateAgentBody = object({ label: optional(label) });

export const agentRoutes = defineRoutes({ tag: 'agents', access: 'key', rate: 'key' }, [
  {
    route: 'POST /v1/agents',
    summary: 'Create a sandbox agent: the service generates and holds an Ed25519 keypair; only the public key is returned.',
    body: CreateAgentBody,
    success: { status: 201, description: 'Agent {id, label, publicKey}' },
    errors: ['bad_request', 'unauthorized', 'payload_too_large', 'rate_limited'],
    async handler({ request, svc, caller }) {
      const body = check((await readJson(request)) ?? {}, CreateAgentBody);
      return json(await createAgent(svc.db, body.label ?? '', scopeOf(caller)), 201);
    },
  },
]);
