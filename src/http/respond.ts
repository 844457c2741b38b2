// Building responses: JSON bodies and the error envelope.
import { errorBody } from '../errors.ts';

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

export function errorResponse(err: unknown): Response {
  const { status, body, headers } = errorBody(err);
  return json(body, status, headers);
}
