// The error codes the service answers with, and the HTTP status of each: defined once here, so the
// service, the typed client and the console agree (causes and fixes are served on the
// service's errors page). A code is stable; a new one is added, never renamed.
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  payment_invalid: 402,
  payment_required: 402,
  malformed_header: 402,
  version_mismatch: 402,
  scheme_mismatch: 402,
  wrong_resource: 402,
  wrong_payee: 402,
  wrong_asset: 402,
  bad_signature: 402,
  forbidden: 403,
  mandate_violation: 403,
  unauthorized_ruling: 403,
  not_found: 404,
  request_timeout: 408,
  method_not_allowed: 405,
  invalid_state: 409,
  replayed: 409,
  payload_too_large: 413,
  misdirected_request: 421,
  unprocessable: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal: 500,
  custody_failed: 502,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The body of every non-2xx answer: one code, a message that names the field or the cause, where to read more. */
export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; docsUrl: string };
}

/** True for an error code this version of the protocol knows (a newer service may answer others). */
export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code);

/**
 * Reads an error envelope from a parsed body: `{code, message, docsUrl?}`, or null when the body is
 * not one (a proxy's HTML page, an empty body). The code is kept even when this version does not know it.
 */
export function readErrorEnvelope(body: unknown): { code: string; message: string; docsUrl?: string } | null {
  if (body === null || typeof body !== 'object') return null;
  const e = (body as { error?: unknown }).error;
  if (e === null || typeof e !== 'object') return null;
  const { code, message, docsUrl } = e as Record<string, unknown>;
  if (typeof code !== 'string' || typeof message !== 'string') return null;
  return { code, message, ...(typeof docsUrl === 'string' ? { docsUrl } : {}) };
}
