// Terms and their acceptance checks: strict validation at escrow creation (docs/protocol.md §3.3). Evaluating
// them against a delivery (§5.1) is the protocol package's code (terms/evaluate), which the offline verifier
// replays verdicts with.

import { badRequest } from '../errors.ts';
import { pointerProblem } from './pointer.ts';
import { codePointLength, isJsonObject, keyPath, rejectUnknownFields, validatePredicate } from './predicates.ts';
import {
  CHECK_KINDS,
  evaluateChecks,
  parseIsoDateTime,
  type CheckKind,
  type DeliveryFacts,
} from '@escrow-settlement/protocol/terms/evaluate';
import type {
  CheckResult,
  DeadlineCheck,
  HashCheck,
  MaxBytesCheck,
  PredicateCheck,
  PriceCheck,
  ShapeCheck,
  TermCheck,
  Terms,
} from '@escrow-settlement/protocol/resources';
import { amountMicro } from '@escrow-settlement/protocol/amounts';

// The wire shapes of terms, checks and verdict results live in the client package.
export type { CheckResult, DeadlineCheck, HashCheck, MaxBytesCheck, PredicateCheck, PriceCheck, ShapeCheck, TermCheck, Terms };

export { CHECK_KINDS, evaluateChecks, parseIsoDateTime, type CheckKind, type DeliveryFacts };

/** Caps (docs/protocol.md §2.6; requiredFields entry length is this module's choice). */
export const MAX_DESCRIPTION_CHARS = 10_000;
export const MAX_CHECKS = 100;
export const MAX_REQUIRED_FIELDS = 100;
export const MAX_REQUIRED_FIELD_CHARS = 1000;

export const HEX64_RE = /^[0-9a-f]{64}$/;

// ---- timestamps (docs/protocol.md §2.5) ----

/** 400 unless `v` is a strict ISO 8601 date-time with a zone; returns epoch ms. */
export function requireIsoDateTime(v: unknown, path: string): number {
  const t = parseIsoDateTime(v);
  if (t === null) throw badRequest(`${path} must be an ISO 8601 date-time with a zone (Z or ±hh:mm), e.g. "2026-11-21T10:00:00.000Z"`);
  return t;
}

// ---- validation ----

const KNOWN_FIELDS: Record<CheckKind, readonly string[]> = {
  hash: ['kind', 'expected'],
  maxBytes: ['kind', 'limit'],
  deadline: ['kind', 'by'],
  shape: ['kind', 'requiredFields'],
  predicate: ['kind', 'name', 'params'],
  price: ['kind', 'perUnit', 'units', 'max'],
};

function isCheckKind(k: unknown): k is CheckKind {
  return typeof k === 'string' && (CHECK_KINDS as readonly string[]).includes(k);
}

function required(obj: Record<string, unknown>, field: string, path: string): unknown {
  if (!Object.hasOwn(obj, field) || obj[field] === undefined) throw badRequest(`${keyPath(path, field)} is required`);
  return obj[field];
}

/** Validate one TermCheck at `path` (e.g. `terms.checks[1]`) and return a normalized copy. */
export function validateCheck(check: unknown, path: string): TermCheck {
  if (!isJsonObject(check)) throw badRequest(`${path} must be an object with a "kind" field`);
  const kind = required(check, 'kind', path);
  if (!isCheckKind(kind)) {
    throw badRequest(`${path}.kind must be one of: ${CHECK_KINDS.join(', ')} (got ${JSON.stringify(kind)})`);
  }
  rejectUnknownFields(check, KNOWN_FIELDS[kind], path);
  switch (kind) {
    case 'hash': {
      const expected = required(check, 'expected', path);
      if (typeof expected !== 'string' || !HEX64_RE.test(expected)) {
        throw badRequest(`${path}.expected must be 64 lowercase hex characters (a sha256 digest)`);
      }
      return { kind, expected };
    }
    case 'maxBytes': {
      const limit = required(check, 'limit', path);
      if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0) {
        throw badRequest(`${path}.limit must be a non-negative integer (bytes)`);
      }
      return { kind, limit };
    }
    case 'deadline': {
      const by = required(check, 'by', path);
      requireIsoDateTime(by, `${path}.by`);
      return { kind, by: by as string }; // kept as given: the terms hash covers what the parties wrote
    }
    case 'shape': {
      const fields = required(check, 'requiredFields', path);
      const fp = `${path}.requiredFields`;
      if (!Array.isArray(fields)) throw badRequest(`${fp} must be an array of strings`);
      if (fields.length < 1 || fields.length > MAX_REQUIRED_FIELDS) {
        throw badRequest(`${fp} must have 1 to ${MAX_REQUIRED_FIELDS} entries (got ${fields.length})`);
      }
      fields.forEach((f, i) => {
        const ep = `${fp}[${i}]`;
        if (typeof f !== 'string' || f === '') throw badRequest(`${ep} must be a non-empty string`);
        if (codePointLength(f) > MAX_REQUIRED_FIELD_CHARS) throw badRequest(`${ep} must be at most ${MAX_REQUIRED_FIELD_CHARS} characters`);
        if (f.startsWith('/')) {
          const problem = pointerProblem(f);
          if (problem !== null) throw badRequest(`${ep} is not a valid JSON Pointer: it ${problem}`);
        }
      });
      return { kind, requiredFields: [...(fields as string[])] };
    }
    case 'price': {
      const perUnit = required(check, 'perUnit', path);
      const micro = amountMicro(perUnit);
      if (micro === null || micro === 0n)
        throw badRequest(`${path}.perUnit must be an amount greater than 0 (a decimal string, e.g. "0.01")`);
      const units = required(check, 'units', path);
      if (typeof units !== 'string' || !units.startsWith('/'))
        throw badRequest(`${path}.units must be a JSON Pointer into the payload, e.g. "/units"`);
      const problem = pointerProblem(units);
      if (problem !== null) throw badRequest(`${path}.units is not a valid JSON Pointer: it ${problem}`);
      const out: PriceCheck = { kind, perUnit: perUnit as string, units };
      if (Object.hasOwn(check, 'max') && check.max !== undefined) {
        const max = amountMicro(check.max);
        if (max === null || max === 0n) throw badRequest(`${path}.max must be an amount greater than 0 (a decimal string)`);
        out.max = check.max as string;
      }
      return out;
    }
    case 'predicate': {
      const v = validatePredicate(check.name, check.params, path);
      return v.params === undefined ? { kind, name: v.name } : { kind, name: v.name, params: v.params };
    }
  }
}

/**
 * Validate Terms strictly (docs/protocol.md §3.3; §2.6 caps and unknown fields): an object with
 * `description` (string, ≤ 10000 code points; may be empty) and `checks` (array of ≤ 100 TermChecks;
 * may be empty, then any delivery passes). Every error is 400 bad_request naming the full path.
 * Returns a normalized copy holding only known fields; values are kept as given.
 */
export function validateTerms(terms: unknown, path = 'terms'): Terms {
  if (!isJsonObject(terms)) throw badRequest(`${path} must be an object with "description" and "checks"`);
  rejectUnknownFields(terms, ['description', 'checks'], path);
  const description = required(terms, 'description', path);
  if (typeof description !== 'string') throw badRequest(`${path}.description must be a string`);
  if (codePointLength(description) > MAX_DESCRIPTION_CHARS) {
    throw badRequest(`${path}.description must be at most ${MAX_DESCRIPTION_CHARS} characters`);
  }
  const checks = required(terms, 'checks', path);
  if (!Array.isArray(checks)) throw badRequest(`${path}.checks must be an array of checks`);
  if (checks.length > MAX_CHECKS) throw badRequest(`${path}.checks must have at most ${MAX_CHECKS} entries (got ${checks.length})`);
  return { description, checks: checks.map((c, i) => validateCheck(c, `${path}.checks[${i}]`)) };
}
