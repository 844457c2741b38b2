// The named predicates of `predicate` checks, evaluated against a delivery payload (the service's protocol documentation, §3.3):
// the code the service judges with and the offline verifier replays with. Web APIs only.

import { canonicalize } from '../crypto/jcs.ts';
import { describePointer, resolvePointer } from './pointer.ts';
import type { PredicateName } from '../resources.ts';

/** A JSON object: non-null, not an array. */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
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

/** Every predicate name; the service's validation covers each one. */
export const PREDICATE_NAMES: readonly PredicateName[] = ['non-empty', 'equals', 'number-range', 'length-range'];

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
