// The closed list of server-side predicates for `predicate` checks: validate params, evaluate (docs/protocol.md §3.3).

import { badRequest } from '../errors.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { describePointer, pointerProblem, resolvePointer } from './pointer.ts';
import type { PredicateName } from '@escrow-settlement/protocol/resources';

// ---- small strict-validation helpers shared by checks.ts and mandateCaps.ts (docs/protocol.md §2.6) ----

/** A JSON object: non-null, not an array. */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `path.key`, or `path["odd key"]` when the key is not identifier-like, so messages stay unambiguous. */
export function keyPath(path: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** 400 naming the first own key of `obj` that is not in `known` (docs/protocol.md §2.6: unknown fields are refused). */
export function rejectUnknownFields(obj: Record<string, unknown>, known: readonly string[], path: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      throw badRequest(`${keyPath(path, key)} is not a known field (known fields: ${known.join(', ')})`);
    }
  }
}

/** Length in Unicode code points, so "é" and "😀" count as 1 each (not UTF-16 code units). */
export function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** JSON type name for messages. */
export function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'object':
      return 'an object';
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return typeof v;
  }
}

// ---- predicates ----

// The names are part of the wire shape (client package); PARAM_SPEC below must cover each one.
export const PREDICATE_NAMES: readonly PredicateName[] = ['non-empty', 'equals', 'number-range', 'length-range'];
export type { PredicateName };

/** Params each predicate accepts; `required` ones must be present (docs/protocol.md §3.3). */
const PARAM_SPEC: Record<PredicateName, { known: readonly string[]; required: readonly string[] }> = {
  'non-empty': { known: [], required: [] },
  equals: { known: ['pointer', 'value'], required: ['pointer', 'value'] },
  'number-range': { known: ['pointer', 'min', 'max'], required: ['pointer'] },
  'length-range': { known: ['pointer', 'min', 'max'], required: ['pointer'] },
};

export function isPredicateName(name: unknown): name is PredicateName {
  return typeof name === 'string' && (PREDICATE_NAMES as readonly string[]).includes(name);
}

/** Longest JCS text quoted in a detail before it is cut. */
const DETAIL_VALUE_MAX = 80;

function show(v: unknown): string {
  let s: string;
  try {
    s = canonicalize(v);
  } catch {
    s = String(v);
  }
  return s.length > DETAIL_VALUE_MAX ? `${s.slice(0, DETAIL_VALUE_MAX)}…` : s;
}

/**
 * Validate a predicate's `name` and `params` at escrow creation (docs/protocol.md §3.3: unknown name or bad
 * params → 400). `path` is the check's path (e.g. `terms.checks[2]`); messages name
 * `path.name` or `path.params.<field>`. Returns a normalized copy (params kept only if given).
 *
 * Decisions: `params` may be omitted only for `non-empty` (which takes none; `{}` is accepted).
 * `number-range` and `length-range` accept neither bound (then they only check the type);
 * bounds are inclusive. `number-range` bounds are finite numbers; `length-range` bounds are
 * non-negative integers counting Unicode code points for strings, items for arrays.
 */
export function validatePredicate(name: unknown, params: unknown, path: string): { name: PredicateName; params?: Record<string, unknown> } {
  if (typeof name !== 'string') throw badRequest(`${path}.name is required and must be a string`);
  if (!isPredicateName(name)) {
    throw badRequest(`${path}.name ${JSON.stringify(name)} is not a known predicate (known predicates: ${PREDICATE_NAMES.join(', ')})`);
  }
  const pp = `${path}.params`;
  const spec = PARAM_SPEC[name];
  if (params === undefined) {
    if (spec.required.length > 0) throw badRequest(`${pp} is required for predicate "${name}" (fields: ${spec.known.join(', ')})`);
    return { name };
  }
  if (!isJsonObject(params)) throw badRequest(`${pp} must be an object`);
  if (spec.known.length === 0 && Object.keys(params).length > 0) {
    throw badRequest(`${keyPath(pp, Object.keys(params)[0])} is not a known field (predicate "${name}" takes no params)`);
  }
  rejectUnknownFields(params, spec.known, pp);
  for (const field of spec.required) {
    if (!Object.hasOwn(params, field)) throw badRequest(`${pp}.${field} is required for predicate "${name}"`);
  }

  const out: Record<string, unknown> = {};
  if (spec.known.includes('pointer')) {
    const problem = pointerProblem(params.pointer);
    if (problem !== null)
      throw badRequest(`${pp}.pointer ${problem === 'must be a string' ? 'must be a JSON Pointer string, e.g. "/score"' : problem}`);
    out.pointer = params.pointer;
  }
  if (name === 'equals') {
    try {
      canonicalize(params.value);
    } catch {
      throw badRequest(`${pp}.value must be a JSON value`);
    }
    out.value = structuredClone(params.value);
  }
  if (name === 'number-range' || name === 'length-range') {
    for (const bound of ['min', 'max'] as const) {
      if (!Object.hasOwn(params, bound)) continue;
      const v = params[bound];
      if (name === 'number-range') {
        if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`${pp}.${bound} must be a number`);
      } else if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
        throw badRequest(`${pp}.${bound} must be a non-negative integer`);
      }
      out[bound] = v;
    }
    if (typeof out.min === 'number' && typeof out.max === 'number' && out.min > out.max) {
      throw badRequest(`${pp}.min (${out.min}) must not be greater than ${pp}.max (${out.max})`);
    }
  }
  return { name, params: out };
}

/** " within 1..5", " at least min 1", " at most max 5", or "" when unbounded; inclusive either way. */
function boundsText(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return ` within ${min}..${max}`;
  if (min !== undefined) return ` at least min ${min}`;
  if (max !== undefined) return ` at most max ${max}`;
  return '';
}

/** Compare `n` with inclusive bounds; null when within, else the failure phrase. */
function outOfRange(n: number, min: number | undefined, max: number | undefined): string | null {
  if (min !== undefined && n < min) return `below min ${min}`;
  if (max !== undefined && n > max) return `above max ${max}`;
  return null;
}

/** The value a validated predicate's pointer names in the payload, and how a detail names the place. */
function atPointer(p: Record<string, unknown>, payload: unknown) {
  const ptr = p.pointer as string;
  return { at: describePointer(ptr), r: resolvePointer(payload, ptr) };
}

/**
 * Evaluate a validated predicate against a delivery payload. Returns a short human `detail`,
 * e.g. "value at /score is 12, above max 10". Throws only for a name/params that were never validated.
 */
export function evaluatePredicate(
  name: string,
  params: Record<string, unknown> | undefined,
  payload: unknown,
): { passed: boolean; detail: string } {
  const p = params ?? {};
  switch (name) {
    case 'non-empty': {
      if (payload === null || payload === undefined) return { passed: false, detail: 'payload is null' };
      if (payload === '') return { passed: false, detail: 'payload is an empty string' };
      if (Array.isArray(payload) && payload.length === 0) return { passed: false, detail: 'payload is an empty array' };
      if (isJsonObject(payload) && Object.keys(payload).length === 0) return { passed: false, detail: 'payload is an empty object' };
      return { passed: true, detail: 'payload is not empty' };
    }
    case 'equals': {
      const { at, r } = atPointer(p, payload);
      if (!r.found) return { passed: false, detail: `no value at ${at}; expected ${show(p.value)}` };
      if (canonicalize(r.value) === canonicalize(p.value)) return { passed: true, detail: `value at ${at} equals ${show(p.value)}` };
      return { passed: false, detail: `value at ${at} is ${show(r.value)}, expected ${show(p.value)}` };
    }
    case 'number-range': {
      const { at, r } = atPointer(p, payload);
      const { min, max } = p as { min?: number; max?: number };
      if (!r.found) return { passed: false, detail: `no value at ${at}; expected a number${boundsText(min, max)}` };
      if (typeof r.value !== 'number') return { passed: false, detail: `value at ${at} is ${jsonTypeOf(r.value)}, not a number` };
      const fail = outOfRange(r.value, min, max);
      if (fail !== null) return { passed: false, detail: `value at ${at} is ${show(r.value)}, ${fail}` };
      return {
        passed: true,
        detail: `value at ${at} is ${show(r.value)}${min === undefined && max === undefined ? ', a number' : `,${boundsText(min, max)}`}`,
      };
    }
    case 'length-range': {
      const { at, r } = atPointer(p, payload);
      const { min, max } = p as { min?: number; max?: number };
      if (!r.found)
        return {
          passed: false,
          detail: `no value at ${at}; expected a string or array${boundsText(min, max) === '' ? '' : ` of length${boundsText(min, max)}`}`,
        };
      let len: number;
      let what: string;
      if (typeof r.value === 'string') {
        len = codePointLength(r.value);
        what = `string at ${at} has ${len} character${len === 1 ? '' : 's'}`;
      } else if (Array.isArray(r.value)) {
        len = r.value.length;
        what = `array at ${at} has ${len} item${len === 1 ? '' : 's'}`;
      } else {
        return { passed: false, detail: `value at ${at} is ${jsonTypeOf(r.value)}, not a string or array` };
      }
      const fail = outOfRange(len, min, max);
      if (fail !== null) return { passed: false, detail: `${what}, ${fail}` };
      return { passed: true, detail: boundsText(min, max) === '' ? what : `${what},${boundsText(min, max)}` };
    }
    default:
      throw new Error(`unknown predicate ${JSON.stringify(name)}`);
  }
}
