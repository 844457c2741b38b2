// The one error class of the service and the one place it becomes a response (docs/protocol.md §19).

import type { ERROR_STATUS, ErrorCode as ProtocolErrorCode } from '@escrow-settlement/protocol/errors';

/** Each code's status (from the protocol package, the one list), cause and fix, for /docs/errors and OpenAPI. */
export const ERROR_CODES = {
  bad_request: {
    status: 400,
    cause: 'Malformed body, invalid JSON, a missing required field, an unknown field or a wrong-shaped value.',
    fix: 'Read `message`: it names the field path and what was expected. Correct the request; do not retry it unchanged.',
  },
  unauthorized: {
    status: 401,
    cause: 'This deployment requires a bearer key and the request had none, or one that is unknown or revoked.',
    fix: 'Send `Authorization: Bearer <key>` with a current key.',
  },
  payment_invalid: {
    status: 402,
    cause:
      "An x402 payment was refused: its value is not the price (below it, or above it: an overpayment is refused, not kept), its validBefore has passed or is more than maxTimeoutSeconds ahead, its nonce was already used (a payment settles once), or a v2 payment's `accepted` differs from the offer in amount, maxTimeoutSeconds or extra.",
    fix: 'Build a fresh payment from the offer (new nonce, value equal to the price, validBefore in the future and at most maxTimeoutSeconds ahead; in v2 send `accepts[0]` verbatim as `accepted`).',
  },
  // x402 refusals (docs/protocol.md §15.4): each names what disagreed between the offer and the signed authorization.
  payment_required: {
    status: 402,
    cause: 'The resource is paid (x402) and the request carried no `X-PAYMENT` (x402 v1) or `PAYMENT-SIGNATURE` (x402 v2) header.',
    fix: "v2: decode the `PAYMENT-REQUIRED` header, sign `accepts[0]` (createPaymentHeaderV2, or @x402/core with proofSandboxScheme) and send it in `PAYMENT-SIGNATURE`; v1: sign the 402 body's `accepts[0]` with createPaymentHeader and send it in `X-PAYMENT`.",
  },
  malformed_header: {
    status: 402,
    cause:
      'The payment header is not standard base64 of a JSON object of the x402 payment shape for its version (a field is missing, unknown or of the wrong form, or a string is not I-JSON), or both header names were sent.',
    fix: 'Send one header: `X-PAYMENT` = base64 {x402Version: 1, scheme, network, payload: {authorization, signature}} or `PAYMENT-SIGNATURE` = base64 {x402Version: 2, resource?, accepted, payload: {authorization, signature}}, as the client helpers build them.',
  },
  version_mismatch: {
    status: 402,
    cause:
      "The payment's `x402Version` does not match its header: `X-PAYMENT` carries x402 v1, `PAYMENT-SIGNATURE` carries x402 v2 (as the official SDKs send them).",
    fix: 'Send a v1 payment in `X-PAYMENT` or a v2 payment in `PAYMENT-SIGNATURE`.',
  },
  scheme_mismatch: {
    status: 402,
    cause:
      "The payment's scheme or network differs from the offer (`proof-sandbox` on `proof-local` in v1, on CAIP-2 `proof:local` in v2).",
    fix: 'Copy `scheme` and `network` from the offer.',
  },
  wrong_resource: {
    status: 402,
    cause:
      "The payment names another resource: the signed authorization's `resource` (or a v2 payment's `resource.url` or `accepted.extra.resource`) is not PUBLIC_URL + the route's path. The URL never comes from the request's Host header.",
    fix: 'Sign the `resource` the offer gives; behind a proxy, set PUBLIC_URL to the address clients use.',
  },
  wrong_payee: {
    status: 402,
    cause: "The payment pays a key (`authorization.to`, or a v2 payment's `accepted.payTo`) other than the offer's `payTo`.",
    fix: "Pay the offer's `payTo`.",
  },
  wrong_asset: {
    status: 402,
    cause: "The payment's asset (`authorization.asset`, or a v2 payment's `accepted.asset`) differs from the offer's `asset`.",
    fix: "Pay in the offer's `asset` (USDC).",
  },
  bad_signature: {
    status: 402,
    cause: "The authorization's signature does not verify with the `from` key over the canonical JSON (RFC 8785) of the authorization.",
    fix: 'Sign JCS(authorization) with the secret key of `from`; change nothing after signing.',
  },
  forbidden: {
    status: 403,
    cause:
      "An admin-only operation with a non-root key, an admin route on a deployment with no API key, a sandbox-only route on a hosted deployment, or a browser request from another site (an `Origin` that is neither the service's own nor in CORS_ORIGINS, or `Sec-Fetch-Site: cross-site` without one); nothing was done.",
    fix: 'Use the root key (API_KEY) for admin routes; sandbox routes exist only in the open sandbox; to call the API from a web page on another origin, list that origin in CORS_ORIGINS.',
  },
  mandate_violation: {
    status: 403,
    cause:
      "The escrow would exceed a mandate cap (per-escrow, cumulative, asset, counterparty, agent, expiry), or the mandate signature is not the principal's.",
    fix: "Create the escrow within the mandate's caps, or register a new mandate signed by the principal.",
  },
  unauthorized_ruling: {
    status: 403,
    cause:
      'A ruling lacks the required signatures (both parties, or the named arbiter), a signature does not verify, or its split shares are malformed (not integers from 0 to 10000, not summing to 10000, missing on a split, or present on another outcome).',
    fix: "Sign the ruling body with both parties' keys or the arbiter's; a split carries shares {payerBps, payeeBps} summing to 10000, other outcomes none.",
  },
  not_found: {
    status: 404,
    cause: 'Unknown id or unknown route; for the proof of an escrow, the matter has not closed yet.',
    fix: 'Check the id and path. A proof exists once the escrow reaches a terminal state.',
  },
  // Answered by the Node edge for requests its HTTP parser refuses (src/node/clientError.ts); the connection is closed after them.
  request_timeout: {
    status: 408,
    cause: 'The request line and headers did not arrive within 10 s, or the whole request within 60 s.',
    fix: 'Send the whole request promptly, on a new connection.',
  },
  method_not_allowed: {
    status: 405,
    cause: 'The path exists but does not take this method (TRACE, CONNECT and methods the service never serves included).',
    fix: 'Use one of the methods the `Allow` response header lists.',
  },
  invalid_state: {
    status: 409,
    cause:
      "The operation is not allowed from the escrow's (or dispute's) current state; or a webhook URL is registered by another key, or a dead letter's URL now belongs to a key that does not see its escrow.",
    fix: 'GET the escrow, read `state`, and follow the lifecycle table (docs/protocol.md §4.1); register a URL of your own.',
  },
  replayed: {
    status: 409,
    cause:
      'This exact client-signed action (same signature) was already accepted once; a signed dispute action counts once and nothing was added to the trail.',
    fix: 'Do nothing if the first attempt succeeded (GET the dispute to see it). To act again, sign a new action with a fresh `signedAt`. Retries of one request should carry an Idempotency-Key, which replays the first answer instead.',
  },
  payload_too_large: {
    status: 413,
    cause: 'The request body is over its cap (1 MB; 32 KB on POST /v1/verify).',
    fix: 'Send a smaller body.',
  },
  misdirected_request: {
    status: 421,
    cause:
      "The open sandbox answers only to host names it knows (localhost, loopback and other IP addresses, the host of PUBLIC_URL), so a DNS-rebinding web page cannot pass as the sandbox's own origin.",
    fix: 'Reach the sandbox as http://localhost:<port> or http://127.0.0.1:<port>, or set PUBLIC_URL to the URL you use.',
  },
  unprocessable: {
    status: 422,
    cause:
      'A well-formed request that cannot proceed: wrong or bad signer, clock skew, a dispute opener who is not a party, or an Idempotency-Key reused with another body.',
    fix: 'Read `message`; sign with the right key, or use a new Idempotency-Key.',
  },
  rate_limited: {
    status: 429,
    cause: 'Over the request budget of this window, or this client already has CLIENT_MAX_CONCURRENCY requests open at once.',
    fix: 'Wait `Retry-After` seconds, then retry with backoff; keep fewer requests open at once.',
  },
  headers_too_large: {
    status: 431,
    cause: 'The request line and headers together are over 16 KB (a very long URL or header).',
    fix: 'Send shorter headers and URL; ids and cursors are never that long.',
  },
  internal: {
    status: 500,
    cause: "An unexpected failure inside the service; nothing about it is the client's fault.",
    fix: 'Retry later; report the `x-request-id` to the operator.',
  },
  custody_failed: {
    status: 502,
    cause: 'Custody could not settle. The attempt is journaled and no proof was issued.',
    fix: 'Retry with POST /v1/escrows/{id}/custody/retry.',
  },
  unavailable: {
    status: 503,
    cause: 'The service is starting, stopping, or cannot reach its database.',
    fix: 'Wait `Retry-After` seconds and retry; a write retried with the same Idempotency-Key is not applied twice.',
  },
} as const satisfies { [C in ProtocolErrorCode]: { status: (typeof ERROR_STATUS)[C]; cause: string; fix: string } };

export type ErrorCode = keyof typeof ERROR_CODES;

/** Extra headers an error response carries (Retry-After, RateLimit-*). */
export type ErrorHeaders = Record<string, string>;

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly headers?: ErrorHeaders;
  /** Extra body fields for the few envelopes that carry more (x402's `accepts`). */
  readonly extra?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, opts: { headers?: ErrorHeaders; extra?: Record<string, unknown>; status?: number } = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = opts.status ?? ERROR_CODES[code].status;
    this.headers = opts.headers;
    this.extra = opts.extra;
  }
}

export const badRequest = (message: string) => new AppError('bad_request', message);
export const notFound = (message: string) => new AppError('not_found', message);
export const invalidState = (message: string) => new AppError('invalid_state', message);
export const unprocessable = (message: string) => new AppError('unprocessable', message);

export const docsUrlFor = (code: string) => `/docs/errors#${code}`;

/**
 * The only place an error leaves the process. Whitelists {code, message, docsUrl}; anything
 * that is not an AppError becomes an opaque 500 so database text and stacks never leak.
 */
export function errorBody(err: unknown): { status: number; body: Record<string, unknown>; headers: ErrorHeaders } {
  if (err instanceof AppError) {
    return {
      status: err.status,
      body: { ...(err.extra ?? {}), error: { code: err.code, message: err.message, docsUrl: docsUrlFor(err.code) } },
      headers: err.headers ?? {},
    };
  }
  return {
    status: 500,
    body: {
      error: {
        code: 'internal',
        message: 'Internal error; the request id identifies it in the operator log.',
        docsUrl: docsUrlFor('internal'),
      },
    },
    headers: {},
  };
}

/** A variable of the environment (or a file it names) that the service cannot start with: it names the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}
