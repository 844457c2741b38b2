// Building responses: JSON bodies and the error envelope.
import { errorBody } from '../errors.ts';
import { unavailableError } from '../db/errors.ts';

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
