// Named schemas of the OpenAPI document: resources as docs/protocol.md §3 and §22 describe them.
import { annotationOf } from '../validate.ts';
import { bool, hex64, hexSig, int, obj, ref, str, ts } from './schemaParts.ts';
import { MetadataS } from '../escrow/metadata.ts';
import { ERROR_CODES } from '../errors.ts';
import { FACILITATOR_RESPONSES, FACILITATOR_SCHEMAS } from './facilitator.ts';
import { PARTY_SIGNATURE_KINDS } from '@escrow-settlement/protocol/types';

/** Codes the edge answers before a route runs (docs/protocol.md §19.3); ERROR_CODES gains them as they land. */
const EDGE_CODES: Record<string, { status: number; cause: string }> = {
  method_not_allowed: { status: 405, cause: 'The path exists but not with this method; `Allow` lists the methods it takes.' },
  unavailable: {
    status: 503,
    cause: 'The service is starting, stopping, or cannot reach its database; retry after `Retry-After` seconds.',
  },
};
export const ALL_ERROR_CODES = [...new Set([...Object.keys(ERROR_CODES), ...Object.keys(EDGE_CODES)])];
export const codeInfo = (c: string) => (ERROR_CODES as Record<string, { status: number; cause: string }>)[c] ?? EDGE_CODES[c];

const amount = { type: 'string', pattern: '^\\d+(\\.\\d{1,6})?$' };
const arr = (items: unknown) => ({ type: 'array', items });

/** On a page (with `limit`): the next page's cursor, null on the last (docs/protocol.md §9.2). */
const nextCursor = {
  type: ['string', 'null'],
  description: 'present when the request gave limit: the cursor of the next page, null on the last',
};
const metadataSchema = { ...(annotationOf(MetadataS) ?? {}) };
const counts = (...keys: string[]) => obj(Object.fromEntries(keys.map((k) => [k, int])));

const check = (kind: string, props: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  properties: { kind: { const: kind }, ...props },
  required: ['kind', ...required],
  additionalProperties: false,
});

export const SCHEMAS: Record<string, unknown> = {
  ...FACILITATOR_SCHEMAS,
  // A 402 from GET /v1/x402/demo also carries x402Version and accepts (docs/protocol.md §15.4).
  Error: obj(
    {
      error: obj({ code: { type: 'string', enum: ALL_ERROR_CODES }, message: str, docsUrl: str }, ['code', 'message']),
      x402Version: int,
      accepts: arr(ref('PaymentRequirements')),
    },
    ['error'],
  ),
  PaymentRequirements: obj({
    scheme: { const: 'proof-sandbox' },
    network: { const: 'proof-local' },
    maxAmountRequired: amount,
    resource: { type: 'string', format: 'uri' },
    description: str,
    mimeType: { const: 'application/json' },
    payTo: hex64,
    maxTimeoutSeconds: int,
    asset: str,
  }),
  KeyRef: {
    type: 'object',
    properties: { publicKey: hex64, label: { type: 'string', maxLength: 200 } },
    required: ['publicKey'],
    additionalProperties: false,
  },
  Signature: {
    type: 'object',
    properties: { signer: hex64, signature: hexSig },
    required: ['signer', 'signature'],
    additionalProperties: false,
  },
  Agent: obj({ id: str, label: str, publicKey: hex64 }),
  TermCheck: {
    oneOf: [
      check('hash', { expected: hex64 }, ['expected']),
      check('maxBytes', { limit: { type: 'integer', minimum: 0 } }, ['limit']),
      check('deadline', { by: ts }, ['by']),
      check('shape', { requiredFields: { type: 'array', items: str, minItems: 1, maxItems: 100 } }, ['requiredFields']),
      check(
        'predicate',
        { name: { type: 'string', enum: ['non-empty', 'equals', 'number-range', 'length-range'] }, params: { type: 'object' } },
        ['name'],
      ),
      check('price', { perUnit: amount, units: { type: 'string', pattern: '^/' }, max: amount }, ['perUnit', 'units']),
    ],
  },
  Terms: {
    type: 'object',
    properties: { description: { type: 'string', maxLength: 10000 }, checks: { type: 'array', items: ref('TermCheck'), maxItems: 100 } },
    required: ['description', 'checks'],
    additionalProperties: false,
  },
  Timeouts: obj(
    {
      deliverWithinSeconds: int,
      resolveWithinSeconds: int,
      decideWithinSeconds: int,
      timeoutRuling: { type: 'string', enum: ['release', 'refund', 'split'] },
      refundWithinSeconds: { type: 'integer', minimum: 0 },
    },
    ['deliverWithinSeconds', 'resolveWithinSeconds', 'decideWithinSeconds', 'timeoutRuling'],
  ),
  Fee: obj({ bps: { type: 'integer', minimum: 0, maximum: 10000 }, recipient: hex64 }, ['bps', 'recipient']),
  Payouts: obj({ payee: amount, payer: amount, fee: amount }, ['payee', 'payer', 'fee']),
  Refund: obj({ id: str, amount, reason: str, by: hex64, at: ts }, ['id', 'amount', 'reason', 'by', 'at']),
  Shares: {
    type: 'object',
    properties: { payerBps: { type: 'integer', minimum: 0, maximum: 10000 }, payeeBps: { type: 'integer', minimum: 0, maximum: 10000 } },
    required: ['payerBps', 'payeeBps'],
    additionalProperties: false,
  },
  MandateCaps: {
    type: 'object',
    properties: {
      agent: hex64,
      perEscrowMax: amount,
      cumulativeMax: amount,
      allowedAssets: arr(str),
      allowedCounterparties: arr(hex64),
      expiresAt: ts,
    },
    required: ['agent', 'perEscrowMax', 'cumulativeMax', 'allowedAssets', 'expiresAt'],
    additionalProperties: false,
  },
  Mandate: obj({
    id: str,
    principal: hex64,
    caps: ref('MandateCaps'),
    signature: ref('Signature'),
    hash: hex64,
    usage: obj({ spent: amount, remaining: amount }),
  }),
  Escrow: obj(
    {
      id: str,
      state: { type: 'string', enum: ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'] },
      payer: ref('KeyRef'),
      payee: ref('KeyRef'),
      arbiter: ref('KeyRef'),
      amount,
      asset: str,
      terms: ref('Terms'),
      timeouts: ref('Timeouts'),
      deadlineAt: ts,
      mandateId: str,
      mandateHash: hex64,
      custody: obj({ status: { type: 'string', enum: ['unfunded', 'locked', 'settle-failed', 'settled'] } }),
      createdAt: ts,
      updatedAt: ts,
      metadata: ref('Metadata'),
      fee: ref('Fee'),
      refundDeadline: ts,
      refundedTotal: amount,
      refunds: arr(ref('Refund')),
    },
    ['id', 'state', 'payer', 'payee', 'amount', 'asset', 'terms', 'timeouts', 'custody', 'createdAt', 'updatedAt'],
  ),
  Metadata: metadataSchema,
  EscrowList: obj({ escrows: arr(ref('Escrow')), nextCursor }),
  Delivery: obj({ id: str, escrowId: str, contentHash: hex64, payload: {}, submittedAt: ts, signature: ref('Signature'), amount }, [
    'id',
    'escrowId',
    'contentHash',
    'payload',
    'submittedAt',
    'signature',
  ]),
  Verdict: obj({
    id: str,
    escrowId: str,
    deliveryId: str,
    passed: bool,
    results: arr(obj({ check: ref('TermCheck'), passed: bool, detail: str })),
    decidedAt: ts,
  }),
  DeliveryResult: obj({ delivery: ref('Delivery'), verdict: ref('Verdict'), proof: ref('Proof') }, ['delivery', 'verdict']),
  Ruling: obj(
    {
      outcome: { type: 'string', enum: ['release', 'refund', 'split'] },
      rationale: str,
      decidedAt: ts,
      decidedBy: { type: 'string', enum: ['co-signature', 'arbiter', 'timeout'] },
      shares: ref('Shares'),
    },
    ['outcome', 'rationale', 'decidedAt', 'decidedBy'],
  ),
  Dispute: obj(
    {
      id: str,
      escrowId: str,
      state: { type: 'string', enum: ['open', 'under-review', 'resolved'] },
      openedBy: hex64,
      reason: str,
      evidence: arr(obj({ party: hex64, contentHash: hex64, note: str, submittedAt: ts })),
      ruling: ref('Ruling'),
      openedAt: ts,
    },
    ['id', 'escrowId', 'state', 'openedBy', 'reason', 'evidence', 'openedAt'],
  ),
  Anchor: obj({ chain: str, contract: str, escrowRef: str, txHash: str }),
  Proof: obj(
    {
      id: str,
      escrowId: str,
      outcome: { type: 'string', enum: ['released', 'refunded', 'split', 'refunded-after-release'] },
      payer: hex64,
      payee: hex64,
      amount,
      asset: str,
      termsHash: hex64,
      deliveryHash: hex64,
      verdictId: str,
      disputeId: str,
      mandateHash: hex64,
      shares: ref('Shares'),
      captured: amount,
      fee: obj({ bps: int, recipient: hex64, amount }, ['bps', 'recipient', 'amount']),
      payouts: ref('Payouts'),
      adjusts: str,
      refundedTotal: amount,
      reason: str,
      trailHead: hex64,
      trailLength: int,
      issuedAt: ts,
      anchor: ref('Anchor'),
      signature: ref('Signature'),
    },
    ['id', 'escrowId', 'outcome', 'payer', 'payee', 'amount', 'asset', 'termsHash', 'trailHead', 'trailLength', 'issuedAt', 'signature'],
  ),
  TrailEntry: obj({ index: int, prevHash: hex64, hash: hex64, at: ts, event: str, body: {} }),
  EngineEvent: obj({ event: str, escrowId: str, at: ts, data: { type: 'object' }, metadata: ref('Metadata') }, [
    'event',
    'escrowId',
    'at',
    'data',
  ]),
  IssuerKey: obj(
    {
      keyId: str,
      alg: { const: 'ed25519' },
      publicKey: hex64,
      validFrom: ts,
      validUntil: ts,
      vkey: {
        type: 'string',
        description: 'C2SP note verifier key under LOG_ORIGIN (issuer document only): <origin>+<hex key hash>+<base64(0x01 ‖ key)>',
      },
    },
    ['keyId', 'alg', 'publicKey', 'validFrom'],
  ),
  WebhookKey: obj(
    {
      keyId: { type: 'string', description: 'whk_ + the first 16 hex characters of sha256(public key)' },
      alg: { const: 'ed25519' },
      publicKey: hex64,
      validFrom: ts,
      validUntil: { ...ts, description: 'when it was rotated out; it signs beside its successor for WEBHOOK_KEY_OVERLAP_SECONDS more' },
    },
    ['keyId', 'alg', 'publicKey', 'validFrom'],
  ),
  Custody: obj(
    {
      escrowId: str,
      status: { type: 'string', enum: ['pending', 'settle-failed', 'confirmed'] },
      outcome: str,
      payerAmount: amount,
      payeeAmount: amount,
      attempts: int,
      lastError: str,
      feeAmount: amount,
      feeRecipient: hex64,
      refunds: arr(
        obj({ id: str, amount, from: { const: 'payee' }, to: { const: 'payer' }, at: ts }, ['id', 'amount', 'from', 'to', 'at']),
      ),
      reference: str,
      createdAt: ts,
      updatedAt: ts,
    },
    ['escrowId', 'status', 'outcome', 'payerAmount', 'payeeAmount', 'attempts', 'createdAt', 'updatedAt'],
  ),
  SignedHead: obj({ logSize: int, rootHash: hex64, signedAt: ts, keyId: str, signature: ref('Signature') }),
};

/** The success body of each operation, keyed `METHOD path`. A test checks every route has one. */
export const RESPONSES: Record<string, unknown> = {
  ...FACILITATOR_RESPONSES,
  'GET /health': obj(
    {
      ok: bool,
      service: str,
      issuer: { type: ['string', 'null'] },
      version: str,
      uptimeSeconds: int,
      log: obj(
        {
          state: { type: 'string', enum: ['checking', 'ok', 'behind-witnesses'] },
          size: int,
          witnessed: int,
          reason: { type: 'string', description: 'why closings are refused, when the answer is 503 because of the log' },
        },
        ['state'],
      ),
    },
    ['ok', 'service', 'issuer', 'version', 'uptimeSeconds'],
  ),
  'GET /.well-known/proof-issuer.json': obj(
    {
      keys: arr(ref('IssuerKey')),
      webhookKeys: arr(ref('WebhookKey')),
      ap2ReceiptKeys: arr(obj({ kty: str, crv: str, x: str, y: str, kid: str, alg: str, use: str })),
    },
    ['keys', 'webhookKeys'],
  ),
  'GET /v1/openapi.json': { type: 'object', description: 'this document' },
  'GET /docs/errors': { type: 'string', description: 'HTML page listing every error code' },
  'POST /v1/agents': ref('Agent'),
  'POST /v1/mandates': ref('Mandate'),
  'GET /v1/mandates/:id': ref('Mandate'),
  'POST /v1/escrows': ref('Escrow'),
  'GET /v1/escrows/:id/ap2-receipt': obj({ receipt: str, claims: { type: 'object' }, kid: str }, ['receipt', 'claims', 'kid']),
  'POST /v1/ap2/challenge': obj({ nonce: str, audience: str, expiresAt: ts }, ['nonce', 'audience', 'expiresAt']),
  'GET /v1/escrows': ref('EscrowList'),
  'GET /v1/escrows/:id': ref('Escrow'),
  'POST /v1/escrows/:id/fund': ref('Escrow'),
  'POST /v1/escrows/:id/delivery': ref('DeliveryResult'),
  'POST /v1/escrows/:id/refund': ref('Proof'),
  'POST /v1/escrows/:id/refunds': obj({ refund: ref('Refund'), proof: ref('Proof') }, ['refund', 'proof']),
  'POST /v1/escrows/:id/refund-requests': obj({ refundRequest: ref('Refund') }, ['refundRequest']),
  'GET /v1/escrows/:id/trail': obj({ entries: arr(ref('TrailEntry')), intactUpTo: { type: ['integer', 'null'] }, nextCursor }, [
    'entries',
    'intactUpTo',
  ]),
  'GET /v1/escrows/:id/events': obj({ events: arr(ref('EngineEvent')), nextCursor }, ['events']),
  'GET /v1/escrows/:id/proof': ref('Proof'),
  'POST /v1/escrows/:id/dispute': ref('Dispute'),
  'GET /v1/escrows/:id/dispute': ref('Dispute'),
  'POST /v1/escrows/:id/dispute/evidence': ref('Dispute'),
  'POST /v1/escrows/:id/dispute/resolve': obj({ dispute: ref('Dispute'), proof: ref('Proof') }),
  'GET /v1/escrows/:id/custody': ref('Custody'),
  'POST /v1/escrows/:id/custody/retry': ref('Proof'),
  'POST /v1/sandbox/clock': obj({ now: ts, offsetSeconds: { type: 'number' } }),
  'GET /v1/sandbox/clock': obj({ now: ts, offsetSeconds: { type: 'number' } }),
  'POST /v1/sandbox/custody/fail-next': obj({ failNext: int }),
  'GET /v1/proofs/:id': ref('Proof'),
  'GET /v1/proofs/:id/verify': obj({ proofId: str, signatureValid: bool, trailIntact: bool, trailHeadMatches: bool, issuer: hex64 }),
  'GET /v1/proofs/:id/bundle': obj(
    {
      proof: ref('Proof'),
      trail: arr(ref('TrailEntry')),
      inclusion: { type: 'object' },
      issuerKeys: arr(ref('IssuerKey')),
      parties: obj({
        signatures: arr(
          obj({
            kind: { type: 'string', enum: [...PARTY_SIGNATURE_KINDS] },
            trailIndex: int,
            publicKey: hex64,
            signedBody: {},
            signature: str,
          }),
        ),
      }),
      terms: ref('Terms'),
      disclosed: obj({ payload: {}, submittedAt: str }, ['payload', 'submittedAt']),
      adjustments: arr(obj({ proof: ref('Proof'), inclusion: { type: 'object' } }, ['proof', 'inclusion'])),
      logProof: {
        type: 'string',
        description:
          'C2SP tlog-proof: the leaf index and inclusion path in the served checkpoint, then that checkpoint with its witness cosignatures',
      },
    },
    ['proof', 'trail', 'inclusion', 'issuerKeys', 'parties', 'terms', 'logProof'],
  ),
  'POST /v1/verify': obj(
    {
      valid: bool,
      signatureValid: bool,
      issuerKnown: bool,
      issuer: hex64,
      keyId: str,
      validFrom: ts,
      validUntil: ts,
      issuedWithinEra: bool,
      anchor: ref('Anchor'),
    },
    ['valid', 'signatureValid', 'issuerKnown', 'issuer'],
  ),
  'GET /v1/log/head': ref('SignedHead'),
  'GET /v1/log/proof/:proofId': obj({
    proofId: str,
    leafIndex: int,
    leafHash: hex64,
    logSize: int,
    rootHash: hex64,
    auditPath: arr(hex64),
    head: ref('SignedHead'),
  }),
  'GET /v1/log/consistency/:firstSize': obj({ firstSize: int, secondSize: int, firstRoot: hex64, secondRoot: hex64, path: arr(hex64) }),
  'GET /v1/log/consistency/:firstSize/:secondSize': obj({
    firstSize: int,
    secondSize: int,
    firstRoot: hex64,
    secondRoot: hex64,
    path: arr(hex64),
  }),
  'GET /v1/log/entries': obj({ entries: arr(obj({ leafIndex: int, proof: ref('Proof') })), nextCursor }, ['entries']),
  'GET /v1/log/checkpoint': { type: 'string', description: 'C2SP tlog-checkpoint signed note (text/plain)' },
  'GET /.well-known/tlog-policy': { type: 'string', description: 'C2SP tlog-policy file (text/plain)' },
  'GET /v1/log/witnesses': obj(
    {
      quorum: int,
      witnesses: arr(
        obj({
          name: str,
          vkey: str,
          url: str,
          cosignedSize: { type: ['integer', 'null'] },
          cosignedAt: { type: ['string', 'null'] },
          failures: int,
          lastError: { type: ['string', 'null'] },
          lastErrorAt: { type: ['string', 'null'] },
        }),
      ),
    },
    ['quorum', 'witnesses'],
  ),
  'GET /v1/log/tile/:tile+': {
    type: 'string',
    format: 'binary',
    description: 'C2SP tlog-tiles hash tile (W x 32 bytes) or entry bundle (uint16 length + entry, repeated)',
  },
  'POST /v1/webhooks': obj({
    ok: bool,
    url: str,
    signingKey: hex64,
    standardWebhooks: obj(
      {
        secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$' },
        publicKey: { type: 'string', pattern: '^whpk_[A-Za-z0-9+/]{43}=$' },
      },
      ['publicKey'],
    ),
  }),
  'GET /v1/webhooks': obj(
    {
      webhooks: arr(str),
      endpoints: arr(obj({ url: str, disabled: bool, disabledAt: ts, disabledReason: str, failingSince: ts }, ['url', 'disabled'])),
      signingKey: hex64,
      nextCursor,
    },
    ['webhooks', 'endpoints', 'signingKey'],
  ),
  'POST /v1/webhooks/enable': obj({ ok: bool, url: str, disabled: bool, wasDisabled: bool }),
  'DELETE /v1/webhooks': obj({ ok: bool, url: str }),
  'GET /v1/webhooks/attempts': obj(
    {
      attempts: arr(
        obj(
          {
            id: str,
            escrowId: str,
            index: int,
            event: str,
            url: str,
            attempt: int,
            status: int,
            error: str,
            durationMs: int,
            outcome: { type: 'string', enum: ['delivered', 'retry', 'dead'] },
            at: ts,
          },
          ['id', 'escrowId', 'index', 'event', 'url', 'attempt', 'durationMs', 'outcome', 'at'],
        ),
      ),
      nextCursor: str,
    },
    ['attempts'],
  ),
  // The console and docs pages (src/routes/console.ts): HTML, or a script / stylesheet.
  'GET /': { type: 'string', description: 'HTML landing page (hosted); the open sandbox answers 303 to /console' },
  'GET /console': { type: 'string', description: 'HTML page of the console' },
  'GET /console/assets/:name': { type: 'string', description: 'a content-hashed script or stylesheet' },
  'GET /favicon.ico': { type: 'string', format: 'binary', description: 'the site icon (ICO with a PNG inside)' },
  'GET /docs': { type: 'string', description: 'HTML rendering of this document' },
  'GET /v1/webhooks/dead-letters': obj(
    {
      deadLetters: arr(
        obj(
          { id: str, url: str, event: ref('EngineEvent'), attempts: int, lastError: str, lastStatus: int, firstAttemptAt: ts, deadAt: ts },
          ['id', 'url', 'event', 'attempts', 'lastError', 'firstAttemptAt', 'deadAt'],
        ),
      ),
      nextCursor,
    },
    ['deadLetters'],
  ),
  'POST /v1/webhooks/dead-letters/:id/redeliver': obj({ ok: bool, id: str }),
  'POST /v1/admin/issuer/rotate': obj({ active: ref('IssuerKey'), retired: ref('IssuerKey') }),
  'POST /v1/admin/webhooks/rotate-key': obj({ active: ref('WebhookKey'), retired: ref('WebhookKey'), overlapUntil: ts }),
  'POST /v1/admin/keys': obj({ id: str, label: str, secret: str, createdAt: ts, rateLimitMax: int }, [
    'id',
    'label',
    'secret',
    'createdAt',
  ]),
  'GET /v1/admin/keys': obj(
    { keys: arr(obj({ id: str, label: str, createdAt: ts, revokedAt: ts, rateLimitMax: int }, ['id', 'label', 'createdAt'])), nextCursor },
    ['keys'],
  ),
  'DELETE /v1/admin/keys/:keyId': obj({ id: str, label: str, createdAt: ts, revokedAt: ts, rateLimitMax: int }, [
    'id',
    'label',
    'createdAt',
    'revokedAt',
  ]),
  'GET /v1/admin/metrics': obj({
    escrows: obj({ total: int, byState: { type: 'object', additionalProperties: int, description: 'count per escrow state' } }),
    proofs: counts('issued'),
    log: counts('size'),
    webhooks: counts('delivered', 'failed', 'deadLettered', 'pending'),
    rateLimit: counts('rejected'),
    apiKeys: counts('active', 'revoked'),
    requestLog: counts('lines', 'rotations'),
    witnesses: counts('dissents'),
    uptimeSeconds: int,
    version: str,
  }),
  'GET /v1/admin/rate': obj({ windowMs: int, windowStartedAt: ts, units: { type: 'object', additionalProperties: int } }),
  'POST /mcp': {
    type: 'object',
    description:
      "a JSON-RPC 2.0 response (MCP Streamable HTTP, JSON response mode); a tools/call result carries the REST route's body as structuredContent",
  },
  'GET /v1/x402/demo': {
    ...obj({ resource: str, title: str, content: str }),
    description: "the paid resource (its sha256 over JCS is the escrow's hash check)",
  },
};
