// Building responses: JSON bodies and the error envelope.
import { AppError, errorBody } from '../errors.ts';
import { isDatabaseUnavailable, OUTAGE_RETRY_AFTER_S } from '../db/errors.ts';

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

export function errorResponse(err: unknown): Response {
  // A lost database is an outage the client may retry (503 unavailable, Retry-After), not a 500.
  const { status, body, headers } = errorBody(unavailableError(err) ?? err);
  return json(body, status, headers);
}

/** The 503 the error boundary answers for an outage, or undefined when `err` is not one. */
export function unavailableError(err: unknown): AppError | undefined {
  if (err instanceof AppError || !isDatabaseUnavailable(err)) return undefined;
  return new AppError(
    'unavailable',
    'the database cannot be reached right now; retry shortly (a write retried with the same Idempotency-Key is not applied twice)',
    {
      headers: { 'retry-after': String(OUTAGE_RETRY_AFTER_S) },
    },
  );
}
