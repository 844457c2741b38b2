// Evaluating terms against a delivery (the service's protocol documentation, §5.1, §5.2): the code the service judges
// deliveries with and the offline verifier replays verdicts with, so both run the same checks. Web APIs only.

import { resolvePointer } from './pointer.ts';
import { evaluatePredicate, isJsonObject, jsonTypeOf } from './predicates.ts';
import type { CheckResult, TermCheck } from '../resources.ts';
import { amountMicro, formatAmount, withinMeteredPrice } from '../amounts.ts';

/** The kinds of check terms may hold. */
export const CHECK_KINDS = ['hash', 'maxBytes', 'deadline', 'shape', 'predicate', 'price'] as const;
export type CheckKind = (typeof CHECK_KINDS)[number];

// ---- timestamps (the service's protocol documentation, §2.5: inputs accept any ISO 8601 date-time with a zone) ----

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

// ---- evaluation ----

/** What the verifier knows about one delivery (the service's protocol documentation, §5.1). */
export type DeliveryFacts = {
  payload: unknown;
  /** sha256 of JCS(payload), hex. */
  contentHash: string;
  /** UTF-8 bytes of JCS(payload), computed by the caller. */
  sizeBytes: number;
  /** Server receipt time. */
  receivedAt: Date;
  /** Micro-units the delivery claims: its `amount` (a partial capture), else the escrow's whole amount. Needed by `price`. */
  amount?: bigint;
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
    case 'price': {
      const perUnit = amountMicro(check.perUnit);
      const max = check.max === undefined ? null : amountMicro(check.max);
      if (perUnit === null || (check.max !== undefined && max === null))
        return { passed: false, detail: 'perUnit or max is not an amount' };
      if (d.amount === undefined) return { passed: false, detail: 'the claimed amount is not known' };
      const at = resolvePointer(d.payload, check.units);
      if (!at.found) return { passed: false, detail: `no value at ${check.units}` };
      const units = at.value;
      if (typeof units !== 'number' || !Number.isFinite(units) || units < 0)
        return { passed: false, detail: `the value at ${check.units} is ${jsonTypeOf(units)}, not a non-negative finite number` };
      const claim = formatAmount(d.amount);
      if (!withinMeteredPrice(d.amount, perUnit, units))
        return { passed: false, detail: `claimed ${claim} is over ${check.perUnit} × ${String(units)} units` };
      if (max !== null && d.amount > max) return { passed: false, detail: `claimed ${claim} is over the max ${check.max}` };
      return {
        passed: true,
        detail: `claimed ${claim} is within ${check.perUnit} × ${String(units)} units${max !== null ? ` and the max ${check.max}` : ''}`,
      };
    }
    default: {
      const kind = (check as { kind?: unknown }).kind;
      return { passed: false, detail: `unknown check kind ${JSON.stringify(kind)}` };
    }
  }
}

/**
 * Run every check against one delivery, in order, one result per check (the service's protocol documentation, §5.2).
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
