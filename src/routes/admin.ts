// Admin routes, root key only (docs/protocol.md §22, §18.2, §18.6): issuer and webhook key rotation (docs/keys.md), bearer keys, metrics, rate counters.
import { object, optional, string } from 'superstruct';
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson } from '../http/body.ts';
import { check, label, positiveInt } from '../validate.ts';
import { checkName, checkSigns, rotateIssuer, rotateWebhook, type LoadedKey, type Purpose } from '../proof/keys.ts';
import { ConfigError } from '../errors.ts';
import { AppError } from '../errors.ts';
import type { Services } from '../services.ts';
import { listKeys, mintKey, revokeKey } from '../access/apiKeys.ts';
import { metrics } from '../ops/metrics.ts';
import { pageOf, pageQuery } from '../paging.ts';

export const RotateBody = object({ key: optional(string()) });

/**
 * The rotation's new key: loaded from `source` by the start-up rules (the edge's injected loader:
 * files and PKCS#11 are Node's), checked to sign and, for a signed-note key, to be named LOG_ORIGIN;
 * without a source only a service whose keys are generated (the sandbox's) may rotate, to a key the edge generates (docs/keys.md "Rotation").
 */
async function rotationKey(svc: Services, purpose: Purpose, source: string | undefined): Promise<LoadedKey> {
  const variable = purpose === 'issuer' ? 'ISSUER_KEY' : 'WEBHOOK_KEY';
  if (source === undefined) {
    if (!svc.keySources.generate)
      throw new AppError(
        'bad_request',
        `key is required: this service signs with named keys (${variable}), so give the new ${purpose} key the same way (file:<path> or pkcs11:<URI>)`,
      );
    return svc.keySources.generate(purpose);
  }
  try {
    const key = await svc.keySources.load(source, 'key', { request: true });
    checkSigns(key, 'key');
    if (purpose === 'issuer') checkName(key, svc.config.logOrigin, 'key');
    return key;
  } catch (err) {
    if (err instanceof ConfigError) throw new AppError('bad_request', err.message);
    throw err;
  }
}

export const MintKeyBody = object({ label: optional(label), rateLimitMax: optional(positiveInt(1e9)) });

const ADMIN_ERRORS = ['unauthorized', 'forbidden', 'rate_limited'];

export const adminRoutes = defineRoutes({ tag: 'admin', access: 'root', rate: 'key' }, [
  {
    route: 'POST /v1/admin/issuer/rotate',
    summary:
      'Make a new issuer key sign every future proof and tree head, on every instance. Body {key: source}: the new key as ISSUER_KEY takes it (file:<path>, mode 0600, or pkcs11:<URI>), loaded and checked to sign before anything changes; only a sandbox on generated keys may omit it (a new key is generated into DATA_DIR/keys/). The outgoing key gets validUntil and stays in the issuer document, so proofs it signed keep verifying.',
    body: RotateBody,
    success: { status: 201, description: '{active: IssuerKey, retired: IssuerKey}' },
    errors: ['bad_request', 'payload_too_large', 'invalid_state', ...ADMIN_ERRORS],
    async handler({ request, svc }) {
      const body = check((await readJson(request)) ?? {}, RotateBody);
      const key = await rotationKey(svc, 'issuer', body.key);
      try {
        return json(await rotateIssuer(svc.db, key), 201);
      } catch (err) {
        if (err instanceof ConfigError) throw new AppError('invalid_state', err.message);
        throw err;
      }
    },
  },
  {
    route: 'POST /v1/admin/webhooks/rotate-key',
    summary:
      "Make a new webhook key sign every delivery, on every instance. Body {key: source}: the new key as WEBHOOK_KEY takes it (file:<path>, mode 0600, or pkcs11:<URI>), loaded and checked to sign before anything changes; only a sandbox on generated keys may omit it (a new key is generated into DATA_DIR/keys/). For WEBHOOK_KEY_OVERLAP_SECONDS (default 86400) the outgoing key still signs every delivery beside the new one: webhook-signature carries a v1a entry by each, x-proof-signature and x-proof-key-id are the new key's. Every webhook key era stays listed in /.well-known/proof-issuer.json (webhookKeys). A key that is or was the issuer key, or already a webhook key era, is 409.",
    body: RotateBody,
    success: { status: 201, description: '{active: WebhookKey, retired: WebhookKey, overlapUntil}' },
    errors: ['bad_request', 'payload_too_large', 'invalid_state', ...ADMIN_ERRORS],
    async handler({ request, svc }) {
      const body = check((await readJson(request)) ?? {}, RotateBody);
      const key = await rotationKey(svc, 'webhook', body.key);
      try {
        const r = await rotateWebhook(svc.db, key);
        const until = new Date(Date.parse(r.retired.validUntil!) + svc.config.webhookKeyOverlapSeconds * 1000).toISOString();
        return json({ ...r, overlapUntil: until }, 201);
      } catch (err) {
        if (err instanceof ConfigError) throw new AppError('invalid_state', err.message);
        throw err;
      }
    },
  },
  {
    route: 'POST /v1/admin/keys',
    summary:
      'Mint a bearer key. The secret (prefix esk_) appears only in this response; the service stores its sha256. Optional rateLimitMax gives the key its own budget per window.',
    body: MintKeyBody,
    success: { status: 201, description: '{id, label, secret, createdAt, rateLimitMax?}' },
    errors: ['bad_request', 'payload_too_large', ...ADMIN_ERRORS],
    async handler({ request, svc }) {
      const body = check((await readJson(request)) ?? {}, MintKeyBody);
      return json(await mintKey(svc.db, body), 201, { 'cache-control': 'no-store' });
    },
  },
  {
    route: 'GET /v1/admin/keys',
    summary:
      'Every minted key, oldest first, revoked ones included; never a secret or a hash. The root key is configuration and is not listed. With ?limit= (1-1000): a page and nextCursor; ?cursor= continues.',
    success: {
      status: 200,
      description: '{keys: [{id, label, createdAt, revokedAt?, rateLimitMax?}], nextCursor?: string|null} (nextCursor with limit)',
    },
    errors: ['bad_request', ...ADMIN_ERRORS],
    async handler({ query, svc }) {
      const q = pageQuery(query, 'key');
      const { page, cursor } = pageOf(await listKeys(svc.db, q.after, q.limit), q, 'key', (k) => k.seq);
      return json({ keys: page.map((k) => k.record), ...cursor });
    },
  },
  {
    route: 'DELETE /v1/admin/keys/:keyId',
    summary:
      'Revoke a minted key, effective on the next request on every instance. Idempotent: revoking again keeps the first revokedAt. The id root is refused (403).',
    success: { status: 200, description: 'the key record with revokedAt' },
    errors: ['not_found', ...ADMIN_ERRORS],
    handler: async ({ params, svc }) => json(await revokeKey(svc.db, params.keyId)),
  },
  {
    route: 'GET /v1/admin/metrics',
    summary:
      "Escrows by state, proofs issued, log size, webhook counters, this instance's rate-limit rejections, request-log counters and witness dissents, API key counts, uptime and version.",
    success: {
      status: 200,
      description:
        '{escrows: {total, byState}, proofs: {issued}, log: {size}, webhooks: {delivered, failed, deadLettered, pending}, rateLimit: {rejected}, apiKeys: {active, revoked}, requestLog: {lines, rotations}, witnesses: {dissents}, uptimeSeconds, version}',
    },
    errors: ADMIN_ERRORS,
    handler: async ({ svc }) => json(await metrics(svc)),
  },
  {
    route: 'GET /v1/admin/rate',
    summary:
      "The current window's counters by budget unit, shared by every instance: key:root and key:key_… for authenticated traffic, ip:… for public routes and failed authentication, verify:… for POST /v1/verify.",
    success: { status: 200, description: '{windowMs, windowStartedAt, units: {unit: n}}' },
    errors: ADMIN_ERRORS,
    handler: async ({ svc }) => json(await svc.rateLimiter.snapshot()),
  },
]);
