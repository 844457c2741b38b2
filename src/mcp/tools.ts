// The MCP tool table (docs/mcp.md): each tool names the REST route it calls, and its schemas come
// from that route's (src/mcp/schemas.ts). A tool call is that route's request, sent through the
// front door (src/mcp/dispatch.ts), so there is no second implementation of anything.
import type { RouteDef } from '../http/route.ts';
import { QUERY } from '../openapi/document.ts';
import { inputSchema, outputSchema, responseOf, selfContained, withTypes, type PathArg } from './schemas.ts';
import type { JsonSchema } from '../openapi/jsonSchema.ts';
import { VERIFY_BUNDLE_INPUT, VERIFY_BUNDLE_OUTPUT } from '@escrow-settlement/protocol/mcp/verifyBundleTool';

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint: boolean;
}

/** A tool whose call is one REST request. */
export interface RouteTool {
  name: string;
  /** `METHOD path` in the route table. */
  route: string;
  description: string;
  pathArg?: PathArg;
  /** Arguments sent as the query string (GET routes), in this order. */
  query?: string[];
  /** Fields every body form needs that the route checks by hand (its struct takes any value, absent too). */
  alsoRequired?: string[];
  /** The REST answer is text (the checkpoint note): the result wraps it as {[textAs]: text}. */
  textAs?: string;
  annotations: ToolAnnotations;
}

/** A tool as tools/list describes it. */
export interface ToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  annotations: ToolAnnotations;
}

const escrowId: PathArg = { name: 'escrowId', prefix: 'esc', description: 'the escrow (esc_…)' };
const proofId: PathArg = { name: 'proofId', prefix: 'prf', description: 'the proof (prf_…)' };

/**
 * Hints (MCP tool annotations): reads are readOnly; a state change is idempotent when calling it again
 * with the same arguments changes nothing more (the lifecycle refuses a second funding, delivery,
 * refund, opening or ruling with 409). A tool that moves money or may close a matter (funding, a
 * delivery that passes, a refund, a ruling) is destructive: what it does cannot be undone, even though
 * the record keeps every step. The service is a closed world: no tool reaches outside it.
 */
const read = (title: string): ToolAnnotations => ({ title, readOnlyHint: true, openWorldHint: false });
const write = (title: string, idempotentHint: boolean, destructiveHint = false): ToolAnnotations => ({
  title,
  readOnlyHint: false,
  destructiveHint,
  idempotentHint,
  openWorldHint: false,
});
/** Moves money or may close a matter: irreversible. */
const DESTRUCTIVE = true;

const SIGNED = 'Sandbox form: give agentId (a sandbox agent whose key the service holds). Client-signed form: the fields the party signs';

export const ROUTE_TOOLS: RouteTool[] = [
  {
    name: 'create_agent',
    route: 'POST /v1/agents',
    annotations: write('Create a sandbox agent', false),
    description:
      'Create a sandbox agent: an Ed25519 key pair the service holds and signs with, to act as payer, payee or arbiter by agentId (for trying things out; a production party holds its own key and signs client-side). Returns {id, label, publicKey}.',
  },
  {
    name: 'create_escrow',
    route: 'POST /v1/escrows',
    annotations: write('Create an escrow', false),
    description:
      "Create an escrow: amount (decimal string, up to 6 places) of asset held for the payee until a delivery passes the terms' checks, a ruling or a timeout. Give payer and payee as agent ids (payerAgentId, payeeAgentId) or KeyRefs ({publicKey}); optional arbiter, mandateId, timeouts, metadata. Or, as its authority instead of a mandateId, ap2: {paymentMandate, checkoutMandate?}, an AP2 v0.2 Payment Mandate chain whose closed mandate carries a nonce from POST /v1/ap2/challenge (docs/ap2.md). Returns the escrow in state created.",
  },
  {
    name: 'fund_escrow',
    route: 'POST /v1/escrows/:id/fund',
    pathArg: escrowId,
    annotations: write('Fund an escrow', true, DESTRUCTIVE),
    description: 'Fund a created escrow: the amount is locked and the delivery deadline starts. Returns the escrow in state funded.',
  },
  {
    name: 'submit_delivery',
    route: 'POST /v1/escrows/:id/delivery',
    pathArg: escrowId,
    alsoRequired: ['payload'],
    annotations: write('Submit a delivery', true, DESTRUCTIVE),
    description: `Deliver the payee's work (payload, any JSON) against a funded escrow; the service checks it against the terms. A passing verdict releases the money (or, with amount, that part of it, the rest back to the payer) and returns the settlement proof. ${SIGNED}: submittedAt and signature, by the payee over JCS {escrowId, contentHash, submittedAt} (with amount in it when given).`,
  },
  {
    name: 'refund_escrow',
    route: 'POST /v1/escrows/:id/refund',
    pathArg: escrowId,
    annotations: write('Refund an escrow', true, DESTRUCTIVE),
    description:
      'Refund a funded escrow, or a delivered one whose verdict failed, to the payer. Returns the settlement proof (outcome refunded).',
  },
  {
    name: 'refund_after_release',
    route: 'POST /v1/escrows/:id/refunds',
    pathArg: escrowId,
    annotations: write('Refund after release', true, DESTRUCTIVE),
    description:
      'Refund part or all of a released escrow (settled or resolved) back to the payer, before its refundDeadline and within the payee\'s net payout, as the payee or the arbiter: amount, reason?, and agentIds: [one sandbox agent], or signedAt and signature over JCS {escrowId, action: "refund", amount, reason, signedAt} (reason "" when absent). Returns {refund, proof}: the adjustment proof (outcome refunded-after-release).',
  },
  {
    name: 'request_refund',
    route: 'POST /v1/escrows/:id/refund-requests',
    pathArg: escrowId,
    annotations: write('Request a refund', true),
    description:
      'As the payer of a released escrow, ask for a refund within its refund window: amount, reason?, and agentIds: [one sandbox agent], or signedAt and signature over JCS {escrowId, action: "refund.request", amount, reason, signedAt}. Recorded (refund.requested); no money moves. Returns {refundRequest}.',
  },
  {
    name: 'open_dispute',
    route: 'POST /v1/escrows/:id/dispute',
    pathArg: escrowId,
    annotations: write('Open a dispute', true),
    description: `Open the escrow's dispute (one per escrow) as its payer or payee, with an optional reason. ${SIGNED}: party, signedAt and signature over JCS {escrowId, action: "dispute.open", reason?, signedAt}.`,
  },
  {
    name: 'submit_evidence',
    route: 'POST /v1/escrows/:id/dispute/evidence',
    pathArg: escrowId,
    annotations: write('Submit dispute evidence', false),
    description: `Add evidence (note, payload) to the escrow's open dispute as its payer or payee. ${SIGNED}: party, signedAt and signature over JCS {escrowId, action: "dispute.evidence", note?, contentHash?, signedAt}.`,
  },
  {
    name: 'resolve_dispute',
    route: 'POST /v1/escrows/:id/dispute/resolve',
    pathArg: escrowId,
    annotations: write('Resolve a dispute', true, DESTRUCTIVE),
    description:
      'Close the dispute with a ruling (release, refund, or split with shares {payerBps, payeeBps}) signed by both parties or by the arbiter: agentIds (sandbox agents) and signatures (Ed25519 over JCS {escrowId, disputeId, outcome, rationale, shares?}) may be combined. Returns the dispute and the settlement proof.',
  },
  {
    name: 'get_escrow',
    route: 'GET /v1/escrows/:id',
    pathArg: escrowId,
    annotations: read('Get an escrow'),
    description: 'Read an escrow: state, parties, amount, terms, deadline, custody.',
  },
  {
    name: 'list_escrows',
    route: 'GET /v1/escrows',
    query: QUERY['GET /v1/escrows'].map((q) => q.name),
    annotations: read('List escrows'),
    description:
      'List escrows in creation order (order: newest for newest first), filtered by state, agentId (payer or payee) and creation time; with limit, a page and nextCursor to pass as cursor.',
  },
  {
    name: 'get_proof',
    route: 'GET /v1/proofs/:id',
    pathArg: proofId,
    annotations: read('Get a settlement proof'),
    description: 'Read a settlement proof: the issuer-signed statement of how a closed escrow settled.',
  },
  {
    name: 'get_bundle',
    route: 'GET /v1/proofs/:id/bundle',
    pathArg: proofId,
    query: QUERY['GET /v1/proofs/:id/bundle'].map((q) => q.name),
    annotations: read('Get a proof bundle'),
    description:
      "Everything needed to verify a settlement offline: the proof, its trail, its log inclusion with a signed head, the issuer keys and the party signatures. With disclose: 'payload' it carries the delivery's payload too, so verify_bundle re-runs every check of the terms. Check it with verify_bundle.",
  },
  {
    name: 'get_log_checkpoint',
    route: 'GET /v1/log/checkpoint',
    textAs: 'checkpoint',
    annotations: read('Get the log checkpoint'),
    description: "The transparency log's current checkpoint, a C2SP signed note: {checkpoint: note text}.",
  },
];

export const VERIFY_BUNDLE_TOOL = {
  name: 'verify_bundle',
  annotations: read('Verify a proof bundle offline'),
  description:
    "Verify a proof bundle (from get_bundle) offline, with no network: the proof's signature, the trail's hash chain, the log inclusion and signed head, the party signatures. Pin the issuer with trustedKeys (hex public keys from /.well-known/proof-issuer.json): without them the answer is valid: false (issuer.trust fails) unless trustBundleKeys: true accepts the bundle's own keys, which shows self-consistency, not who issued it. verdict.replay re-runs the terms' checks (all of them when the bundle was fetched with the payload disclosed). Returns {valid, checks: [{name, ok, detail}]}.",
};

const listingCache = new WeakMap<ReadonlyArray<RouteDef>, ToolListing[]>();

/** The tools, as tools/list gives them; built once per route table. */
export function toolListings(routes: ReadonlyArray<RouteDef>): ToolListing[] {
  const hit = listingCache.get(routes);
  if (hit) return hit;
  const out: ToolListing[] = [];
  for (const t of ROUTE_TOOLS) {
    const def = routeOf(routes, t.route);
    const query = Object.fromEntries((QUERY[t.route] ?? []).map((q) => [q.name, { ...q.schema, description: q.description }]));
    out.push({
      name: t.name,
      title: t.annotations.title,
      description: t.description,
      inputSchema: inputSchema(def, t.pathArg, query, t.alsoRequired),
      outputSchema: outputSchema(
        t.textAs ? { type: 'object', properties: { [t.textAs]: responseOf(t.route) }, required: [t.textAs] } : responseOf(t.route),
      ),
      annotations: t.annotations,
    });
  }
  out.push({
    name: VERIFY_BUNDLE_TOOL.name,
    title: VERIFY_BUNDLE_TOOL.annotations.title,
    description: VERIFY_BUNDLE_TOOL.description,
    inputSchema: withTypes(selfContained(VERIFY_BUNDLE_INPUT)),
    outputSchema: outputSchema(VERIFY_BUNDLE_OUTPUT),
    annotations: VERIFY_BUNDLE_TOOL.annotations,
  });
  listingCache.set(routes, out);
  return out;
}

export function routeOf(routes: ReadonlyArray<RouteDef>, key: string): RouteDef {
  const def = routes.find((r) => `${r.method} ${r.path}` === key);
  if (!def) throw new Error(`MCP tool names a route the service does not serve: ${key}`);
  return def;
}
