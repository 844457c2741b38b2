// Escrow metadata: the caller's own key-value notes (order ids, customer refs), Stripe's limits
// (docs/protocol.md §3.5). Stored and echoed, never interpreted, and never part of a proof or the trail.
import { define } from 'superstruct';
import { annotate } from '../validate.ts';
import { badRequest } from '../errors.ts';

export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_KEY = 40;
export const METADATA_MAX_VALUE = 500;

export type Metadata = Record<string, string>;

/** Keys that name parts of every JavaScript object: refused, so what is stored is what was sent. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

// A lone surrogate cannot be stored as UTF-8 text (and is not I-JSON, RFC 7493); NUL cannot be held
// by Postgres text. Both are refused here so they never reach the database as a 500.
const BAD_CHAR = /[\u0000]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Validates metadata; a 400 names `metadata` or `metadata.<key>` and the limit that was broken. */
export function validateMetadata(v: unknown): Metadata {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw badRequest('metadata must be a JSON object of string values');
  const keys = Object.keys(v);
  if (keys.length > METADATA_MAX_KEYS) throw badRequest(`metadata has ${keys.length} keys; at most ${METADATA_MAX_KEYS} are allowed`);
  const out: Metadata = {};
  for (const k of keys) {
    const at = `metadata.${k.slice(0, 60)}`;
    if (k.length === 0) throw badRequest('metadata keys must not be empty');
    if (k.length > METADATA_MAX_KEY) throw badRequest(`${at} key is ${k.length} characters; at most ${METADATA_MAX_KEY} are allowed`);
    if (BAD_CHAR.test(k)) throw badRequest(`${at} key must not contain NUL or a lone surrogate`);
    // Refused, not dropped: `out[k] = v` with k = "__proto__" would change out's prototype (or do
    // nothing) instead of storing the key, and the other two shadow what every object has.
    if (RESERVED_KEYS.has(k))
      throw badRequest(`${at} key "${k}" is reserved (__proto__, constructor and prototype are refused as metadata keys); rename it`);
    const val = (v as Record<string, unknown>)[k];
    if (typeof val !== 'string') throw badRequest(`${at} must be a string`);
    if (val.length > METADATA_MAX_VALUE) throw badRequest(`${at} is ${val.length} characters; at most ${METADATA_MAX_VALUE} are allowed`);
    if (BAD_CHAR.test(val)) throw badRequest(`${at} must not contain NUL or a lone surrogate`);
    out[k] = val;
  }
  return out;
}

/** The request struct checks the shape only; validateMetadata (in the handler) names the offending key. */
export const MetadataS = annotate(
  define<Metadata>(
    'metadata',
    (v) => (v !== null && typeof v === 'object' && !Array.isArray(v)) || 'must be a JSON object of string values',
  ),
  {
    type: 'object',
    maxProperties: METADATA_MAX_KEYS,
    propertyNames: { minLength: 1, maxLength: METADATA_MAX_KEY },
    additionalProperties: { type: 'string', maxLength: METADATA_MAX_VALUE },
    description: `Your own key-value notes: at most ${METADATA_MAX_KEYS} keys, keys 1-${METADATA_MAX_KEY} characters, string values of at most ${METADATA_MAX_VALUE} characters. Set at creation; echoed on every escrow and webhook event; not part of proofs.`,
  },
);
