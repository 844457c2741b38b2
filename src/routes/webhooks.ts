// Webhook routes: register, list, unregister, dead letters and redelivery (docs/protocol.md §14).
import { define, object } from 'superstruct';
import { defineRoutes, type Ctx } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { readJson, readNoBody } from '../http/body.ts';
import { check } from '../validate.ts';
import { notFound } from '../errors.ts';
import { pageOf, pageQuery } from '../paging.ts';
import { activeKey } from '../proof/keys.ts';
import { scopeOf } from '../access/tenancy.ts';
import { formatPublicKey, formatSecret } from '../webhooks/standard.ts';
import { checkDestination, MAX_URL_LENGTH, parseWebhookUrl } from '../webhooks/url.ts';
import { enableWebhook, listDeadLetters, listWebhooks, redeliverDeadLetter, unregisterWebhook } from '../webhooks/registry.ts';
import { registerWithinCap } from '../webhooks/urlCap.ts';

const urlString = define<string>('url', (v) =>
  typeof v !== 'string'
    ? 'must be a string (an absolute http(s) URL)'
    : v.length === 0
      ? 'must not be empty'
      : v.length > MAX_URL_LENGTH
        ? `must be at most ${MAX_URL_LENGTH} characters`
        : true,
);
export const WebhookBody = object({ url: urlString });

/** The body's url, validated and in canonical form; 400 naming `url` otherwise. `asGiven`: its WHATWG form. */
async function bodyUrl(ctx: Ctx): Promise<{ url: string; asGiven: string }> {
  const b = check(await readJson(ctx.request), WebhookBody);
  const url = parseWebhookUrl(b.url).href;
  return { url, asGiven: new URL(b.url).href };
}

const signingKey = async (ctx: Ctx) => (await activeKey(ctx.svc.db, 'webhook')).publicKey;

export const webhookRoutes = defineRoutes({ tag: 'webhooks', access: 'key', rate: 'key' }, [
  {
    route: 'POST /v1/webhooks',
    summary:
      "Register a URL for every event (signed, retried, dead-lettered); a minted key's URL gets only the events of escrows that key sees. URLs compare in canonical form (docs/security.md), so another spelling of a registered URL is the same URL. Registering it again keeps one registration; another key registering it is 409, and so is a URL beyond the WEBHOOK_MAX_URLS_PER_KEY (default 20) a key may have. Pin the returned signingKey to verify deliveries; standardWebhooks.secret (whsec_, shown once: only in the answer that creates the registration) verifies v1 signatures, standardWebhooks.publicKey (whpk_) v1a.",
    body: WebhookBody,
    success: {
      status: 201,
      description:
        '{ok: true, url (normalised), signingKey: hex64, standardWebhooks: {secret?: "whsec_…" (only in the answer that first shows it), publicKey: "whpk_…"}}',
    },
    errors: ['bad_request', 'unauthorized', 'invalid_state', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      const { url } = await bodyUrl(ctx);
      await checkDestination(new URL(url), ctx.svc.config.webhookAllowPrivate, ctx.svc.resolveHost);
      const secret = await registerWithinCap(ctx.svc.db, url, scopeOf(ctx.caller), ctx.svc.config.webhookMaxUrlsPerKey);
      const key = await signingKey(ctx);
      const standardWebhooks = { ...(secret !== null ? { secret: formatSecret(secret) } : {}), publicKey: formatPublicKey(key) };
      return json({ ok: true, url, signingKey: key, standardWebhooks }, 201);
    },
  },
  {
    route: 'GET /v1/webhooks',
    summary:
      "Registered webhook URLs (a minted key's own) in registration order, and the deployment-wide signing key. endpoints says for each whether it is disabled (every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS), since when and why, and since when its attempts have been failing. With ?limit= (1-1000): a page and nextCursor; ?cursor= continues.",
    success: {
      status: 200,
      description:
        '{webhooks: [url], endpoints: [{url, disabled, disabledAt?, disabledReason?, failingSince?}], signingKey: hex64, nextCursor?: string|null} (nextCursor with limit)',
    },
    errors: ['bad_request', 'unauthorized', 'rate_limited'],
    async handler(ctx) {
      const q = pageQuery(ctx.query, 'whk');
      const { page, cursor } = pageOf(await listWebhooks(ctx.svc.db, q.after, q.limit, scopeOf(ctx.caller)), q, 'whk', (w) => w.seq);
      const endpoints = page.map(({ seq: _seq, ...e }) => e);
      return json({ webhooks: page.map((w) => w.url), endpoints, signingKey: await signingKey(ctx), ...cursor });
    },
  },
  {
    route: 'DELETE /v1/webhooks',
    summary:
      'Unregister a URL (body {url}); its pending deliveries are dropped, its dead letters stay listed for the key that owned it and can be redelivered once the URL is registered again.',
    body: WebhookBody,
    success: { status: 200, description: '{ok: true, url}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      const { url, asGiven } = await bodyUrl(ctx);
      if (!(await unregisterWebhook(ctx.svc.db, url, scopeOf(ctx.caller), asGiven))) throw notFound(`no webhook registered for ${url}`);
      return json({ ok: true, url });
    },
  },
  {
    route: 'POST /v1/webhooks/enable',
    summary:
      'Enable a disabled URL again (body {url}): deliveries resume, including those it had pending when it was disabled; events made while it was disabled were not queued for it (replay them with GET /v1/escrows/{id}/events). Enabling an enabled URL changes nothing.',
    body: WebhookBody,
    success: { status: 200, description: '{ok: true, url, disabled: false, wasDisabled: boolean}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'payload_too_large', 'rate_limited'],
    async handler(ctx) {
      const { url, asGiven } = await bodyUrl(ctx);
      const was = await enableWebhook(ctx.svc.db, url, scopeOf(ctx.caller), asGiven);
      if (was === null) throw notFound(`no webhook registered for ${url}`);
      return json({ ok: true, url, disabled: false, wasDisabled: was });
    },
  },
  {
    route: 'GET /v1/webhooks/dead-letters',
    summary:
      'Deliveries that failed every attempt, oldest first, each with the event exactly as it was sent. With ?limit= (1-1000): a page and nextCursor; ?cursor= continues.',
    success: {
      status: 200,
      description:
        '{deadLetters: [{id, url, event: EngineEvent, attempts, lastError, lastStatus?, firstAttemptAt, deadAt}], nextCursor?: string|null} (nextCursor with limit)',
    },
    errors: ['bad_request', 'unauthorized', 'rate_limited'],
    async handler(ctx) {
      const q = pageQuery(ctx.query, 'dlr');
      const { page, cursor } = pageOf(await listDeadLetters(ctx.svc.db, q.after, q.limit, scopeOf(ctx.caller)), q, 'dlr', (d) => d.seq);
      return json({ deadLetters: page.map(({ seq: _seq, ...d }) => d), ...cursor });
    },
  },
  {
    route: 'POST /v1/webhooks/dead-letters/:id/redeliver',
    summary:
      "Put a dead letter's event back in the outbox for its URL with a fresh attempt count; it leaves the dead-letter list. 409 while its URL is not registered (to this key) now.",
    success: { status: 202, description: '{ok: true, id}' },
    errors: ['bad_request', 'unauthorized', 'not_found', 'invalid_state', 'rate_limited'],
    async handler(ctx) {
      await readNoBody(ctx.request, 'redeliver');
      const id = ctx.params.id;
      if (!(await redeliverDeadLetter(ctx.svc.db, id, scopeOf(ctx.caller)))) throw notFound(`no dead letter ${id}`);
      return json({ ok: true, id }, 202);
    },
  },
]);
