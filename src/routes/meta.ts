// Meta routes: health and the issuer key document (docs/protocol.md §22, §11.2).
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { activeKey, issuerKeys, webhookKeys } from '../proof/keys.ts';
import { issuerVkey } from '@escrow-settlement/protocol/issuer';
import { openApiDocument } from '../openapi/document.ts';
import { VERSION } from '../version.ts';
import { BEHIND_RETRY_AFTER_S } from '../tlog/anchor.ts';

export const metaRoutes = defineRoutes({ tag: 'meta', access: 'public' }, [
  {
    route: 'GET /health',
    summary: 'Liveness and database reachability; names the active issuer key.',
    success: {
      status: 200,
      description:
        '{ok, service, issuer, version, uptimeSeconds}, with witnesses also log: {state, size, witnessed}; 503 with ok false when the database is unreachable, and whenever closings are refused: behind its witnesses (log.state "behind-witnesses") or still checking with them after 30 s (log.state "checking"), log.reason saying why',
    },
    errors: [],
    async handler({ svc }) {
      const uptimeSeconds = Math.floor((svc.nowMs() - svc.startedAt) / 1000);
      try {
        const key = await activeKey(svc.db, 'issuer');
        // With witnesses: whether the log may grow (docs/operations.md §3). Whenever closings are
        // refused (behind them, or checking with them for over 30 s) this instance issues no proof,
        // so it is not healthy, though reads still work: 503 and why, so a load balancer moves on.
        const log = svc.anchor.view();
        const body = { service: 'escrow-settlement', issuer: key.publicKey, version: svc.version, uptimeSeconds, ...(log ? { log } : {}) };
        if (log?.state === 'behind-witnesses') return json({ ok: false, ...body }, 503, { 'retry-after': String(BEHIND_RETRY_AFTER_S) });
        if (log?.state === 'checking' && log.reason)
          return json({ ok: false, ...body }, 503, { 'retry-after': String(Math.max(1, Math.ceil(svc.config.witnessIntervalMs / 1000))) });
        return json({ ok: true, ...body });
      } catch {
        // Retry-After as on every other 503 (docs/protocol.md §19.2, `unavailable`): load balancers and clients back off alike.
        return json({ ok: false, service: 'escrow-settlement', issuer: null, version: svc.version, uptimeSeconds }, 503, {
          'retry-after': '5',
        });
      }
    },
  },
  {
    route: 'GET /.well-known/proof-issuer.json',
    summary:
      'Every issuer key era, oldest first; the last key signs today. Each key carries vkey, its C2SP note verifier key under LOG_ORIGIN, which checks GET /v1/log/checkpoint. webhookKeys: every webhook key era, oldest first, the last one active (a retired one still signs deliveries beside it for WEBHOOK_KEY_OVERLAP_SECONDS after its validUntil).',
    success: { status: 200, description: '{keys: [IssuerKey with vkey], webhookKeys: [WebhookKey], ap2ReceiptKeys?: [JWK with kid]}' },
    errors: [],
    async handler({ svc }) {
      // vkey = <origin>+<hex key hash>+<base64(0x01 ‖ key)> (c2sp.org/signed-note): what note.NewVerifier and witnesses take.
      const keys = (await issuerKeys(svc.db)).map((k) => ({ ...k, vkey: issuerVkey(svc.config.logOrigin, k.publicKey) }));
      // webhookKeys: every webhook key era, so a receiver can tell a rotated key from a stranger's (docs/keys.md).
      const webhook = await webhookKeys(svc.db);
      // ap2ReceiptKeys: the JWKs AP2 Payment Receipts are signed with, when AP2 is on (docs/ap2.md §7).
      return json({ keys, webhookKeys: webhook, ...(svc.ap2Receipt ? { ap2ReceiptKeys: [svc.ap2Receipt.jwk] } : {}) }, 200, {
        'cache-control': 'public, max-age=60',
      });
    },
  },
  {
    route: 'GET /v1/openapi.json',
    access: 'key',
    rate: 'key',
    summary: 'This OpenAPI 3.1 document: every route, its schemas and the error model.',
    success: { status: 200, description: `OpenAPI 3.1 document, info.version ${VERSION}` },
    errors: ['unauthorized', 'rate_limited'],
    // servers: PUBLIC_URL (README.md "Configuration"; it defaults to the listening address).
    handler: async ({ routes, svc }) => json(openApiDocument(routes, { serverUrl: svc.config.publicUrl })),
  },
]);
