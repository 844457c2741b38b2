// Terms and their acceptance checks: strict validation at escrow creation, evaluation against a delivery (docs/protocol.md §3.3, §5.1).

import { badRequest } from '../errors.ts';
import { pointerProblem, resolvePointer } from './pointer.ts';
import {
  codePointLength,
  evaluatePredicate,
  isJsonObject,
  jsonTypeOf,
  keyPath,
  rejectUnknownFields,
  validatePredicate,
} from './predicates.ts';
import type {
  CheckResult,
  DeadlineCheck,
  HashCheck,
  MaxBytesCheck,
  PredicateCheck,
  ShapeCheck,
  TermCheck,
  Terms,
} from '@escrow-settlement/protocol/resources';

// The wire shapes of terms, checks and verdict results live in the client package.
export type { CheckResult, DeadlineCheck, HashCheck, MaxBytesCheck, PredicateCheck, ShapeCheck, TermCheck, Terms };

export const CHECK_KINDS = ['hash', 'maxBytes', 'deadline', 'shape', 'predicate'] as const;
export type CheckKind = (typeof CHECK_KINDS)[number];

/** Caps (docs/protocol.md §2.6; requiredFields entry length is this module's choice). */
export const MAX_DESCRIPTION_CHARS = 10_000;
export const MAX_CHECKS = 100;
export const MAX_REQUIRED_FIELDS = 100;
export const MAX_REQUIRED_FIELD_CHARS = 1000;

export const HEX64_RE = /^[0-9a-f]{64}$/;

// ---- timestamps (docs/protocol.md §2.5: inputs accept any ISO 8601 date-time with a zone) ----

/** YYYY-MM-DDThh:mm[:ss[.fraction]] then Z or ±hh:mm. Uppercase T and Z, as ISO 8601 writes them. */
const ISO_DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * Epoch milliseconds of a strict ISO 8601 date-time with a zone, or null. The regex plus field
 * ranges refuse what Date.parse alone lets through (it accepts "2026-02-30" and "24:00").
 * Leap seconds (":60") are refused. Fractions beyond milliseconds are truncated.
 */
export function parseIsoDateTime(s: unknown): number | null {
  if (typeof s !== 'string') return null;
  const m = ISO_DATE_TIME_RE.exec(s);
  if (m === null) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1) return null;
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate(); // leap year template, then fix Feb below
  const isLeap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > (month === 2 && !isLeap ? 28 : daysInMonth)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return null;
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

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

// ---- evaluation ----

/** What the verifier knows about one delivery (docs/protocol.md §5.1). */
export type DeliveryFacts = {
  payload: unknown;
  /** sha256 of JCS(payload), hex. */
  contentHash: string;
  /** UTF-8 bytes of JCS(payload), computed by the caller. */
  sizeBytes: number;
  /** Server receipt time. */
  receivedAt: Date;
};

function evaluateCheck(check: TermCheck, d: DeliveryFacts): { passed: boolean; detail: string } {
  switch (check.kind) {
    case 'hash': {
      if (d.contentHash.toLowerCase() === check.expected) return { passed: true, detail: 'content hash matches' };
      return { passed: false, detail: `content hash ${d.contentHash} does not match the expected ${check.expected}` };
    }
    case 'maxBytes': {
      if (d.sizeBytes <= check.limit)
        return { passed: true, detail: `payload is ${d.sizeBytes} bytes, within the ${check.limit}-byte limit` };
      return { passed: false, detail: `payload is ${d.sizeBytes} bytes, over the ${check.limit}-byte limit` };
    }
    case 'deadline': {
      const by = parseIsoDateTime(check.by);
      const at = d.receivedAt.getTime();
      if (by === null) return { passed: false, detail: `deadline ${JSON.stringify(check.by)} is not a valid date-time` };
      const byText = new Date(by).toISOString();
      const atText = Number.isNaN(at) ? 'an invalid time' : d.receivedAt.toISOString();
      if (at <= by) return { passed: true, detail: `received at ${atText}, by the deadline ${byText}` };
      return { passed: false, detail: `received at ${atText}, after the deadline ${byText}` };
    }
    case 'shape': {
      if (!isJsonObject(d.payload)) return { passed: false, detail: `payload is ${jsonTypeOf(d.payload)}, not an object` };
      const payload = d.payload;
      const missing = check.requiredFields.filter((f) =>
        f.startsWith('/') ? !resolvePointer(payload, f).found : !Object.hasOwn(payload, f),
      );
      if (missing.length > 0)
        return { passed: false, detail: `missing required field${missing.length === 1 ? '' : 's'}: ${missing.join(', ')}` };
      const n = check.requiredFields.length;
      return { passed: true, detail: `all ${n} required field${n === 1 ? '' : 's'} present` };
    }
    case 'predicate': {
      return evaluatePredicate(check.name, check.params, d.payload);
    }
    default: {
      const kind = (check as { kind?: unknown }).kind;
      return { passed: false, detail: `unknown check kind ${JSON.stringify(kind)}` };
    }
  }
}

/**
 * Run every check against one delivery, in order, one result per check (docs/protocol.md §5.2).
 * `passed` is true when every check passed (so also for an empty list). Never throws for a
 * check that was validated; a check that cannot be evaluated fails with the reason as detail.
 */
export function evaluateChecks(checks: readonly TermCheck[], delivery: DeliveryFacts): { passed: boolean; results: CheckResult[] } {
  const results = checks.map((check): CheckResult => {
    let r: { passed: boolean; detail: string };
    try {
      r = evaluateCheck(check, delivery);
    } catch (err) {
      r = { passed: false, detail: `check could not be evaluated: ${err instanceof Error ? err.message : String(err)}` };
    }
    return { check, passed: r.passed, detail: r.detail };
  });
  return { passed: results.every((r) => r.passed), results };
}
