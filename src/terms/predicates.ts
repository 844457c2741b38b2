// The closed list of predicates for `predicate` checks: validating their params at escrow creation
// (docs/protocol.md §3.3). Evaluating them is the protocol package's code (terms/predicates), which the
// offline verifier replays with.

import { badRequest } from '../errors.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { pointerProblem } from './pointer.ts';
import {
  codePointLength,
  evaluatePredicate,
  isJsonObject,
  isPredicateName,
  jsonTypeOf,
  PREDICATE_NAMES,
} from '@escrow-settlement/protocol/terms/predicates';
import type { PredicateName } from '@escrow-settlement/protocol/resources';

export { codePointLength, evaluatePredicate, isJsonObject, isPredicateName, jsonTypeOf, PREDICATE_NAMES };

// ---- small strict-validation helpers shared by checks.ts and mandateCaps.ts (docs/protocol.md §2.6) ----

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

// ---- predicates ----

// The names are part of the wire shape (client package); PARAM_SPEC below must cover each one.
export type { PredicateName };

/** Params each predicate accepts; `required` ones must be present (docs/protocol.md §3.3). */
const PARAM_SPEC: Record<PredicateName, { known: readonly string[]; required: readonly string[] }> = {
  'non-empty': { known: [], required: [] },
  equals: { known: ['pointer', 'value'], required: ['pointer', 'value'] },
  'number-range': { known: ['pointer', 'min', 'max'], required: ['pointer'] },
  'length-range': { known: ['pointer', 'min', 'max'], required: ['pointer'] },
};

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
