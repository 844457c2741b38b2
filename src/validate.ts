// Validation at the edge with superstruct: a 400 names the field path and says why (docs/design.md §2.4).
import { type StructError, define, enums, object, optional, refine, size, string, type Struct, validate as ssValidate } from 'superstruct';
import { badRequest } from './errors.ts';

export function fieldPath(path: ReadonlyArray<string | number>, root = ''): string {
  let out = root;
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${p}` : String(p);
  return out || 'body';
}

/** Validates `value` against `struct`; the first failure becomes a 400 naming its path. */
export function check<T>(value: unknown, struct: Struct<T, any>, root = ''): T {
  if (value === undefined) throw badRequest(`${root || 'request body'} is required (a JSON object)`);
  const [err, out] = ssValidate(value, struct, { coerce: true });
  if (err) throw badRequest(describe(err, root));
  return out as T;
}

function describe(err: StructError, root: string): string {
  // The first failure, read off the error itself: err.failures() builds every failure, and a body of
  // 300,000 array elements or 90,000 unknown keys (within 1 MB) then cost seconds of CPU per request.
  const prefix = err.path.length === 0 ? '' : `At path: ${err.path.join('.')} -- `;
  const f = {
    path: err.path,
    type: err.type,
    value: err.value,
    refinement: err.refinement,
    message: err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message,
  };
  const at = fieldPath(f.path, root);
  if (f.type === 'never') return `${at} is not a known field`;
  if (f.value === undefined && f.refinement === undefined) return `${at} is required`;
  if (f.type === 'object' && f.path.length === 0 && !root) return 'request body must be a JSON object';
  const custom = f.message && !f.message.startsWith('Expected') ? f.message : undefined;
  return `${at} ${custom ?? f.message.replace(/^Expected/, 'expected')}`;
}

/**
 * JSON Schema annotations for the OpenAPI document, keyed by a struct's coercer: superstruct
 * carries the coercer through optional(), size() and refine(), so the annotation survives them.
 */
const annotations = new WeakMap<object, Record<string, unknown>>();
export function annotate<S extends Struct<any, any>>(struct: S, schema: Record<string, unknown>): S {
  annotations.set(struct.coercer, schema);
  return struct;
}
export const annotationOf = (struct: Struct<any, any>) => annotations.get(struct.coercer);

const HEX64 = /^[0-9a-f]{64}$/;
export const hex64 = annotate(
  define<string>('hex64', (v) => (typeof v === 'string' && HEX64.test(v)) || 'must be 64 lowercase hex characters'),
  { type: 'string', pattern: '^[0-9a-f]{64}$' },
);
export const sigHex = annotate(
  define<string>(
    'signature',
    (v) => (typeof v === 'string' && /^[0-9a-f]{128}$/.test(v)) || 'must be a 128-character lowercase hex Ed25519 signature',
  ),
  { type: 'string', pattern: '^[0-9a-f]{128}$' },
);
export const amountStr = annotate(
  define<string>(
    'amount',
    (v) =>
      (typeof v === 'string' && /^\d{1,18}(\.\d{1,6})?$/.test(v) && !/^0+(\.0+)?$/.test(v)) ||
      'must be a decimal string greater than 0 with at most 6 fraction digits, e.g. "10.5"',
  ),
  { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,6})?$', description: 'decimal amount > 0, at most 6 fraction digits' },
);
/** An amount that may be zero (a proof's payouts and fee: docs/protocol.md §24.1). */
export const amountOrZero = annotate(
  define<string>(
    'amount',
    (v) =>
      (typeof v === 'string' && /^\d{1,18}(\.\d{1,6})?$/.test(v)) || 'must be a decimal string with at most 6 fraction digits, e.g. "0"',
  ),
  { type: 'string', pattern: '^\\d{1,18}(\\.\\d{1,6})?$', description: 'decimal amount >= 0, at most 6 fraction digits' },
);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
export const timestamp = annotate(
  define<string>(
    'timestamp',
    (v) =>
      (typeof v === 'string' && ISO.test(v) && !Number.isNaN(Date.parse(v))) ||
      'must be an ISO 8601 date-time with a zone, e.g. "2026-11-21T10:00:00.000Z"',
  ),
  { type: 'string', format: 'date-time' },
);
// NUL (U+0000) is refused: Postgres text cannot hold it, so it would fail at the database as a 500.
export const boundedString = (max: number, min = 0) =>
  annotate(
    refine(size(string(), min, max), 'text', (v) => !v.includes('\u0000') || 'must not contain the NUL character (U+0000)'),
    { type: 'string', ...(min ? { minLength: min } : {}), maxLength: max },
  );
export const asset = annotate(
  refine(size(string(), 1, 64), 'asset', (v) => /^[A-Za-z0-9._:-]+$/.test(v) || 'must match ^[A-Za-z0-9._:-]+$'),
  { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._:-]+$' },
);
export const label = boundedString(200);
export const idOf = (prefix: string) =>
  annotate(
    define<string>(
      `${prefix} id`,
      (v) => (typeof v === 'string' && v.length <= 64 && v.startsWith(`${prefix}_`)) || `must be an id starting with ${prefix}_`,
    ),
    { type: 'string', pattern: `^${prefix}_`, maxLength: 64 },
  );
export const positiveInt = (max = 2_147_483_647) =>
  annotate(
    define<number>(
      'integer',
      (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max) || `must be a whole number from 1 to ${max}`,
    ),
    { type: 'integer', minimum: 1, maximum: max },
  );

/** An integer from `min` to `max` (a fee's basis points, a window that may be 0). */
export const intIn = (min: number, max: number) =>
  annotate(
    define<number>(
      'integer',
      (v) => (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) || `must be a whole number from ${min} to ${max}`,
    ),
    { type: 'integer', minimum: min, maximum: max },
  );

// Request schemas shared by several routes and the x402 facilitator.
/**
 * A required field whose content a hand validator checks (validateTerms, validateMandateCaps) so its
 * 400 can name the exact inner path: the struct only insists that it is there, and the OpenAPI
 * document shows it as required with its named schema.
 */
export const requiredJson = (schema: string) =>
  annotate(
    define<unknown>(schema, (v) => v !== undefined),
    { $ref: `#/components/schemas/${schema}` },
  );

export const KeyRefS = object({ publicKey: hex64, label: optional(label) });
export const SignatureS = object({ signer: hex64, signature: sigHex });
/** Ten years: a longer stage deadline is almost certainly a unit mistake. */
export const MAX_STAGE_SECONDS = 315_360_000;
export const TimeoutsS = object({
  deliverWithinSeconds: optional(positiveInt(MAX_STAGE_SECONDS)),
  resolveWithinSeconds: optional(positiveInt(MAX_STAGE_SECONDS)),
  decideWithinSeconds: optional(positiveInt(MAX_STAGE_SECONDS)),
  timeoutRuling: optional(enums(['release', 'refund', 'split'])),
  refundWithinSeconds: optional(intIn(0, MAX_STAGE_SECONDS)),
});
/** An escrow's fee (docs/protocol.md §24.1): basis points of the payee's share, and who receives it. */
export const FeeS = object({ bps: intIn(0, 10_000), recipient: hex64 });
