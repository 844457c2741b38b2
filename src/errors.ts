// The one error class of the service and the one place it becomes a response (SPEC part 7).

export const ERROR_CODES = {
  bad_request: { status: 400, cause: 'Malformed body, invalid JSON, a missing required field, an unknown field or a wrong-shaped value.', fix: 'Read `message`: it names the field path and what was expected. Correct the request; do not retry it unchanged.' },
  unauthorized: { status: 401, cause: 'This deployment requires a bearer key and the request had none, or one that is unknown or revoked.', fix: 'Send `Authorization: Bearer <key>` with a current key.' },
  payment_invalid: { status: 402, cause: 'An x402 payment was refused: its value is below the price, its validBefore has passed, or its nonce was already used (a payment settles once).', fix: 'Build a fresh payment from the 402 body\'s `accepts` (new nonce, value at least maxAmountRequired, validBefore in the future) and send it in `X-PAYMENT`.' },
  // x402 refusals (SPEC part 7): each names what disagreed between the offer and the signed authorization.
  payment_required: { status: 402, cause: 'The resource is paid (x402) and the request carried no `X-PAYMENT` (or `PAYMENT-SIGNATURE`) header.', fix: 'Read `accepts` in the 402 body, sign a payment with the client library\'s createPaymentHeader, and repeat the request with it in `X-PAYMENT`.' },
  malformed_header: { status: 402, cause: 'The payment header is not standard base64 of a JSON object of the x402 payment shape (a field is missing, unknown or of the wrong form), or both header names were sent.', fix: 'Send one header whose value is base64(JSON {x402Version, scheme, network, payload: {authorization, signature}}), as createPaymentHeader builds it.' },
  version_mismatch: { status: 402, cause: 'The payment\'s `x402Version` is not one this route accepts (1 in `X-PAYMENT`; 1 or 2 in `PAYMENT-SIGNATURE`).', fix: 'Use the `x402Version` of the 402 body.' },
  scheme_mismatch: { status: 402, cause: 'The payment\'s `scheme` or `network` differs from the offer (`proof-sandbox` on `proof-local`).', fix: 'Copy `scheme` and `network` from the offer in `accepts`.' },
  wrong_resource: { status: 402, cause: 'The signed authorization\'s `resource` is not the absolute URL of the requested route.', fix: 'Sign the `resource` given in `accepts` and request that exact URL.' },
  wrong_payee: { status: 402, cause: 'The signed authorization pays a key (`to`) other than the offer\'s `payTo`.', fix: 'Set `to` to the offer\'s `payTo`.' },
  wrong_asset: { status: 402, cause: 'The signed authorization\'s `asset` differs from the offer\'s `asset`.', fix: 'Pay in the offer\'s `asset` (USDC).' },
  bad_signature: { status: 402, cause: 'The authorization\'s signature does not verify with the `from` key over the canonical JSON (RFC 8785) of the authorization.', fix: 'Sign JCS(authorization) with the secret key of `from`; change nothing after signing.' },
  forbidden: { status: 403, cause: 'An admin-only operation with a non-root key, an admin route on a deployment with no API key, or a sandbox-only route on a hosted deployment.', fix: 'Use the root key (API_KEY) for admin routes; sandbox routes exist only in the open sandbox.' },
  mandate_violation: { status: 403, cause: 'The escrow would exceed a mandate cap (per-escrow, cumulative, asset, counterparty, agent, expiry), or the mandate signature is not the principal\'s.', fix: 'Create the escrow within the mandate\'s caps, or register a new mandate signed by the principal.' },
  unauthorized_ruling: { status: 403, cause: 'A ruling lacks the required signatures (both parties, or the named arbiter), or split shares are malformed.', fix: 'Sign the ruling body with both parties\' keys or the arbiter\'s; give integer `shares` summing to 10000 only for a split.' },
  not_found: { status: 404, cause: 'Unknown id or unknown route; for the proof of an escrow, the matter has not closed yet.', fix: 'Check the id and path. A proof exists once the escrow reaches a terminal state.' },
  // Answered by the Node edge for requests its HTTP parser refuses (src/node/clientError.ts); the connection is closed after them.
  request_timeout: { status: 408, cause: 'The request line and headers did not arrive within 10 s, or the whole request within 60 s.', fix: 'Send the whole request promptly, on a new connection.' },
  invalid_state: { status: 409, cause: 'The operation is not allowed from the escrow\'s (or dispute\'s) current state.', fix: 'GET the escrow, read `state`, and follow the lifecycle table in the README.' },
  payload_too_large: { status: 413, cause: 'The request body is over its cap (1 MB; 32 KB on POST /v1/verify).', fix: 'Send a smaller body.' },
  unprocessable: { status: 422, cause: 'A well-formed request that cannot proceed: wrong or bad signer, clock skew, a dispute opener who is not a party, or an Idempotency-Key reused with another body.', fix: 'Read `message`; sign with the right key, or use a new Idempotency-Key.' },
  rate_limited: { status: 429, cause: 'Over the request budget of this window.', fix: 'Wait `Retry-After` seconds, then retry with backoff.' },
  headers_too_large: { status: 431, cause: 'The request line and headers together are over 16 KB (a very long URL or header).', fix: 'Send shorter headers and URL; ids and cursors are never that long.' },
  internal: { status: 500, cause: 'An unexpected failure inside the service; nothing about it is the client\'s fault.', fix: 'Retry later; report the `x-request-id` to the operator.' },
  custody_failed: { status: 502, cause: 'Custody could not settle. The attempt is journaled and no proof was issued.', fix: 'Retry with POST /v1/escrows/{id}/custody/retry.' },
  unavailable: { status: 503, cause: 'The service is starting, stopping, or cannot reach its database.', fix: 'Wait `Retry-After` seconds and retry; a write retried with the same Idempotency-Key is not applied twice.' },
} as const;

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
    body: { error: { code: 'internal', message: 'Internal error; the request id identifies it in the operator log.', docsUrl: docsUrlFor('internal') } },
    headers: {},
  };
}
