// Reading request bodies: capped while streaming (a 50 MB body is never buffered), parsed strictly
// (I-JSON: no duplicate keys, NUL or lone surrogates; strictJson.ts). Every route reads JSON here.
import { AppError, badRequest } from '../errors.ts';
import { parseStrictJson } from './strictJson.ts';
import { concatBytes } from '@escrow-settlement/protocol/crypto/bytes';

export const MAX_BODY = 1024 * 1024;
export const MAX_VERIFY_BODY = 32 * 1024;

function tooLarge(limit: number) {
  return new AppError('payload_too_large', `request body is over the ${limit === MAX_BODY ? '1 MB' : '32 KB'} limit for this route`);
}

/**
 * A request body an edge reads for the app without a web stream (src/node/adapter.ts, HTTP_BODY=direct):
 * resolves with every byte, or with 'over' as soon as more than `limit` have arrived (reading stops
 * there); rejects when the body cannot be read to its end.
 */
export type DirectBody = (limit: number) => Promise<Uint8Array | 'over'>;

const directBodies = new WeakMap<Request, DirectBody>();

/** Gives `request` a body read by `read` instead of its (absent) stream; readBytes uses it once. */
export function withDirectBody(request: Request, read: DirectBody): Request {
  directBodies.set(request, read);
  return request;
}

/** Reads at most `limit` bytes; stops reading (and cancels the stream) as soon as it is over. */
export async function readBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) throw tooLarge(limit);
  const direct = directBodies.get(request);
  if (direct) {
    directBodies.delete(request);
    let bytes: Uint8Array | 'over';
    try {
      bytes = await direct(limit);
    } catch {
      throw badRequest('request body could not be read');
    }
    if (bytes === 'over') throw tooLarge(limit);
    return bytes;
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await reader.read();
    } catch {
      throw badRequest('request body could not be read');
    }
    if (r.done) break;
    total += r.value.byteLength;
    if (total > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(r.value);
  }
  return chunks.length === 1 ? chunks[0] : concatBytes(...chunks);
}

/** The parsed JSON body, or a 400 that says what is wrong with it and where. An empty body: undefined. */
export async function readJson(request: Request, limit = MAX_BODY): Promise<unknown> {
  const bytes = await readBytes(request, limit);
  if (bytes.byteLength === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badRequest('request body is not valid UTF-8');
  }
  return parseStrictJson(text);
}

/**
 * The body of a POST that takes none: nothing, or `{}`. Anything else is a 400 (unknown fields are
 * refused, docs/protocol.md §2.6) naming the field and `what` takes no fields. Returned for the
 * Idempotency-Key fingerprint.
 */
export async function readNoBody(request: Request, what: string): Promise<unknown> {
  const raw = await readJson(request);
  if (raw === undefined) return raw;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('request body must be a JSON object');
  const [field] = Object.keys(raw);
  if (field !== undefined) throw badRequest(`${field} is not a known field (${what} takes no body fields)`);
  return raw;
}
