// The one error class of the service and the one place it becomes a response (SPEC part 7).

export const ERROR_CODES = {
  bad_request: { status: 400, cause: 'Malformed body, invalid JSON, a missing required field, an unknown field or a wrong-shaped value.', fix: 'Read `message`: it names the field path and what was expected. Correct the request; do not retry it unchanged.' },
  unauthorized: { status: 401, cause: 'This deployment requires a bearer key and the request had none, or one that is unknown or revoked.', fix: 'Send `Authorization: Bearer <key>` with a current key.' },
  payment_invalid: { status: 402, cause: 'An x402 payment was refused (value below the price, expired authorization, reused nonce) or is required.', fix: 'Build a fresh payment from the 402 body\'s `accepts` and send it in `X-PAYMENT`.' },
  forbidden: { status: 403, cause: 'An admin-only operation with a non-root key, an admin route on a deployment with no API key, or a sandbox-only route on a hosted deployment.', fix: 'Use the root key (API_KEY) for admin routes; sandbox routes exist only in the open sandbox.' },
  mandate_violation: { status: 403, cause: 'The escrow would exceed a mandate cap (per-escrow, cumulative, asset, counterparty, agent, expiry), or the mandate signature is not the principal\'s.', fix: 'Create the escrow within the mandate\'s caps, or register a new mandate signed by the principal.' },
  unauthorized_ruling: { status: 403, cause: 'A ruling lacks the required signatures (both parties, or the named arbiter), or split shares are malformed.', fix: 'Sign the ruling body with both parties\' keys or the arbiter\'s; give integer `shares` summing to 10000 only for a split.' },
  not_found: { status: 404, cause: 'Unknown id or unknown route; for the proof of an escrow, the matter has not closed yet.', fix: 'Check the id and path. A proof exists once the escrow reaches a terminal state.' },
  invalid_state: { status: 409, cause: 'The operation is not allowed from the escrow\'s (or dispute\'s) current state.', fix: 'GET the escrow, read `state`, and follow the lifecycle table in the README.' },
  payload_too_large: { status: 413, cause: 'The request body is over its cap (1 MB; 32 KB on POST /v1/verify).', fix: 'Send a smaller body.' },
  unprocessable: { status: 422, cause: 'A well-formed request that cannot proceed: wrong or bad signer, clock skew, a dispute opener who is not a party, or an Idempotency-Key reused with another body.', fix: 'Read `message`; sign with the right key, or use a new Idempotency-Key.' },
  rate_limited: { status: 429, cause: 'Over the request budget of this window.', fix: 'Wait `Retry-After` seconds, then retry with backoff.' },
  internal: { status: 500, cause: 'An unexpected failure inside the service; nothing about it is the client\'s fault.', fix: 'Retry later; report the `x-request-id` to the operator.' },
  custody_failed: { status: 502, cause: 'Custody could not settle. The attempt is journaled and no proof was issued.', fix: 'Retry with POST /v1/escrows/{id}/custody/retry.' },
  unavailable: { status: 503, cause: 'The service is starting, stopping, or cannot reach its database.', fix: 'Retry after a short wait.' },
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
