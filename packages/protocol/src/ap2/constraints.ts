// An AP2 v0.2 Payment Mandate bound to one escrow: the closed mandate's claims against the escrow, then every constraint of the open mandate (the AP2 guide (ap2.md in the repository docs) §3, §4); Web APIs only.
import { canonicalize } from '../crypto/jcs.ts';
import { Ap2Refusal } from './sdjwt.ts';
import { iso4217MinorUnit, NO_MINOR_UNIT } from './iso4217.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => canonicalize(a ?? null) === canonicalize(b ?? null);
const refuse = (field: string, message: string): never => {
  throw new Ap2Refusal(field, message);
};

/** This service's identity as a Payment Initiation Service Provider (AP2 `types/pisp.json`). */
export interface Pisp {
  legal_name: string;
  brand_name: string;
  domain_name: string;
}

/**
 * The minor-unit exponent of an ISO 4217 code from the service's own table (./iso4217.ts: USD 2, JPY 0,
 * HUF 2, IQD 3, CLF 4), never from the runtime's locale data; null for a code the table does not hold.
 */
export function minorExponent(currency: string): number | null {
  return iso4217MinorUnit(currency);
}

/** Micro-units (the service's amount unit, 10^-6) of `minor` minor units of a currency with `exp` fraction digits. */
export const minorToMicro = (minor: bigint, exp: number) => minor * 10n ** BigInt(6 - exp);

/** Minor units of a micro-unit amount, or null when it is not a whole number of them. */
export function microToMinor(micro: bigint, exp: number): bigint | null {
  const step = 10n ** BigInt(6 - exp);
  return micro % step === 0n ? micro / step : null;
}

/** A major-unit JSON number (budget.max) in minor units, or null when it is not a whole number of them. */
export function majorToMinor(major: number, exp: number): bigint | null {
  if (!Number.isFinite(major) || major < 0) return null;
  // The shortest decimal that round-trips (ECMA-262 Number::toString), read exactly: 1000.1 is 100010 cents.
  const m = /^(\d+)(?:\.(\d+))?$/.exec(String(major));
  if (!m) return null;
  const frac = m[2] ?? '';
  if (frac.replace(/0+$/, '').length > exp) return null;
  return BigInt(m[1]) * 10n ** BigInt(exp) + BigInt(frac.padEnd(exp, '0') || '0');
}

/** An ISO 8601 value as the interval of instants it names: a date-time with a zone is one instant, a date is its whole UTC day. */
export function instantRange(v: unknown, field: string, what: string): [number, number] {
  if (typeof v !== 'string') return refuse(field, `${what} must be an ISO 8601 date or date-time string`);
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (date) {
    const start = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]));
    if (new Date(start).toISOString().slice(0, 10) !== v) return refuse(field, `${what} ${JSON.stringify(v)} is not a calendar date`);
    return [start, start + 86_400_000 - 1];
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(v))
    return refuse(
      field,
      `${what} ${JSON.stringify(v)} is not an ISO 8601 date, or a date-time with a zone (a time without a zone names no instant)`,
    );
  const t = Date.parse(v);
  if (Number.isNaN(t)) return refuse(field, `${what} ${JSON.stringify(v)} is not a valid date-time`);
  return [t, t];
}

/** Adds calendar months in UTC, the day clamped to the target month's last (31 Jan + 1 month = 28 or 29 Feb). */
export function addMonths(at: Date, months: number): Date {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth() + months;
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const out = new Date(at.getTime());
  out.setUTCFullYear(y, m, Math.min(at.getUTCDate(), last));
  return out;
}

/** The earliest instant the next occurrence may be accepted after one accepted at `last` (the AP2 guide (ap2.md in the repository docs) §4). */
export function nextAllowed(frequency: string, last: Date): Date {
  const days = { DAILY: 1, WEEKLY: 7, BIWEEKLY: 14 }[frequency];
  if (days !== undefined) return new Date(last.getTime() + days * 86_400_000);
  const months = { MONTHLY: 1, QUARTERLY: 3, ANNUALLY: 12 }[frequency];
  if (months !== undefined) return addMonths(last, months);
  return last; // ON_DEMAND: no spacing
}

const FREQUENCIES = ['ON_DEMAND', 'DAILY', 'WEEKLY', 'BIWEEKLY', 'MONTHLY', 'QUARTERLY', 'ANNUALLY'];

/** What the escrow asks of the mandate. */
export interface EscrowTerms {
  /** In micro-units of the asset. */
  amount: bigint;
  asset: string;
  /** The payee's Ed25519 public key, hex64. */
  payeeKey: string;
}

/** What the closed mandate binds, once it matches the escrow. */
export interface Bound {
  transactionId: string;
  /** The payment in minor units of `currency`. */
  minor: bigint;
  currency: string;
  exponent: number;
}

/**
 * The closed mandate's claims against the escrow (the AP2 guide (ap2.md in the repository docs) §3): `transaction_id`, `payment_amount`
 * in integer minor units equal to the escrow's amount with `currency` its asset, `payee.id` the payee's
 * key, a `payment_instrument`, `pisp` (when present) this service's; then the open mandate's pre-set
 * claims (payee, payment_amount, payment_instrument, execution_date) equal to the closed one's.
 */
export function bindToEscrow(open: Obj, closed: Obj, escrow: EscrowTerms, pisp: Pisp | null): Bound {
  const transactionId = closed.transaction_id;
  if (typeof transactionId !== 'string' || transactionId === '') refuse('ap2.transaction_id', 'closed mandate has no transaction_id');
  const pa = closed.payment_amount;
  if (!isObj(pa) || typeof pa.currency !== 'string')
    return refuse('ap2.amount', 'closed mandate payment_amount must be {amount, currency}');
  const exponent = minorExponent(pa.currency);
  if (exponent === null)
    return refuse(
      'ap2.amount',
      NO_MINOR_UNIT.has(pa.currency)
        ? `payment_amount.currency ${pa.currency} has no minor unit in ISO 4217 (a metal, fund unit or test code): no amount of it is an integer of minor units`
        : `payment_amount.currency ${JSON.stringify(pa.currency)} is not a current ISO 4217 currency code`,
    );
  if (typeof pa.amount !== 'number' || !Number.isSafeInteger(pa.amount) || pa.amount <= 0)
    return refuse('ap2.amount', `payment_amount.amount must be a positive integer of minor units (got ${JSON.stringify(pa.amount)})`);
  if (pa.currency !== escrow.asset)
    refuse(
      'ap2.amount',
      `payment_amount.currency ${pa.currency} is not the escrow's asset ${escrow.asset} (an AP2 escrow's asset is the ISO 4217 code)`,
    );
  const minor = microToMinor(escrow.amount, exponent);
  if (minor === null)
    refuse('ap2.amount', `the escrow's amount is not a whole number of ${pa.currency} minor units (${exponent} fraction digits)`);
  if (BigInt(pa.amount) !== minor)
    refuse(
      'ap2.amount',
      `payment_amount.amount ${pa.amount} (minor units) is not the escrow's amount (${minor} minor units of ${pa.currency})`,
    );
  const payee = closed.payee;
  if (!isObj(payee) || typeof payee.id !== 'string') return refuse('ap2.payee', 'closed mandate payee must be {id, name}');
  if (payee.id !== escrow.payeeKey)
    refuse('ap2.payee', `payee.id ${JSON.stringify(payee.id)} is not the escrow payee's publicKey ${escrow.payeeKey}`);
  const instrument = closed.payment_instrument;
  if (!isObj(instrument) || typeof instrument.id !== 'string')
    refuse('ap2.payment_instrument', 'closed mandate payment_instrument must be {id, type}');
  if (closed.pisp !== undefined && (pisp === null || !same(closed.pisp, pisp)))
    refuse('ap2.pisp', `closed mandate pisp is not this service's AP2_PISP identity${pisp === null ? ' (none is configured)' : ''}`);
  for (const [claim, field] of [
    ['payee', 'ap2.payee'],
    ['payment_amount', 'ap2.amount'],
    ['payment_instrument', 'ap2.payment_instrument'],
    ['execution_date', 'ap2.execution_date'],
  ] as const) {
    if (open[claim] !== undefined && !same(open[claim], closed[claim]))
      refuse(field, `the open mandate pre-sets ${claim}; the closed mandate's differs`);
  }
  return { transactionId: transactionId as string, minor: minor as bigint, currency: pa.currency, exponent };
}

/** A mandate's use so far (state keyed by the open mandate, the AP2 guide (ap2.md in the repository docs) §5). */
export interface Usage {
  /** Micro-units accepted under the mandate, refunds given back. */
  spent: bigint;
  occurrences: number;
  lastAt: Date | null;
}

export interface ConstraintContext {
  bound: Bound;
  closed: Obj;
  pisp: Pisp | null;
  /** The service clock. */
  now: Date;
  usage: Usage;
  /** sd_hash form of the presented open Checkout Mandate, when one was given. */
  checkoutHash: string | null;
}

const integer = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v);

type Evaluator = (c: Obj, ctx: ConstraintContext) => void;

const EVALUATORS: Record<string, [string, Evaluator]> = {
  'payment.amount_range': [
    'ap2.amount_range',
    (c, { bound }) => {
      if (typeof c.currency !== 'string') refuse('ap2.amount_range', 'amount_range.currency is required');
      if (!integer(c.max) || (c.min !== undefined && !integer(c.min)))
        refuse('ap2.amount_range', 'amount_range.max and min must be integers of minor units (a decimal bound is malformed)');
      if (c.currency !== bound.currency)
        refuse('ap2.amount_range', `amount_range.currency ${c.currency} is not the payment's ${bound.currency}`);
      if (c.min !== undefined && bound.minor < BigInt(c.min as number))
        refuse('ap2.amount_range', `amount ${bound.minor} is below amount_range.min ${c.min} (minor units)`);
      if (bound.minor > BigInt(c.max as number))
        refuse('ap2.amount_range', `amount ${bound.minor} is above amount_range.max ${c.max} (minor units)`);
    },
  ],
  'payment.allowed_payees': [
    'ap2.allowed_payees',
    (c, { closed }) => {
      if (!Array.isArray(c.allowed)) refuse('ap2.allowed_payees', 'allowed_payees.allowed must be an array of merchants');
      const p = closed.payee as Obj;
      const ok = (c.allowed as unknown[]).some(
        (a) =>
          isObj(a) && a.id === p.id && (a.name === undefined || a.name === p.name) && (a.website === undefined || a.website === p.website),
      );
      if (!ok) refuse('ap2.allowed_payees', `payee ${JSON.stringify(p.id)} is not among the mandate's allowed payees`);
    },
  ],
  'payment.allowed_payment_instruments': [
    'ap2.allowed_payment_instruments',
    (c, { closed }) => {
      if (!Array.isArray(c.allowed)) refuse('ap2.allowed_payment_instruments', 'allowed_payment_instruments.allowed must be an array');
      const id = (closed.payment_instrument as Obj).id;
      if (!(c.allowed as unknown[]).some((a) => isObj(a) && a.id === id))
        refuse('ap2.allowed_payment_instruments', `payment instrument ${JSON.stringify(id)} is not among the allowed instruments`);
    },
  ],
  'payment.allowed_pisps': [
    'ap2.allowed_pisps',
    (c, { pisp }) => {
      if (!Array.isArray(c.allowed)) refuse('ap2.allowed_pisps', 'allowed_pisps.allowed must be an array');
      if (pisp === null) refuse('ap2.allowed_pisps', 'the mandate restricts PISPs and this service has no AP2_PISP identity configured');
      if (!(c.allowed as unknown[]).some((a) => same(a, pisp)))
        refuse('ap2.allowed_pisps', `this service (${pisp?.domain_name}) is not among the mandate's allowed PISPs`);
    },
  ],
  'payment.execution_date': [
    'ap2.execution_date',
    (c, { closed, now }) => {
      const [start, end] =
        closed.execution_date === undefined
          ? [now.getTime(), now.getTime()]
          : instantRange(closed.execution_date, 'ap2.execution_date', 'execution_date');
      if (c.not_before !== undefined) {
        const [nb] = instantRange(c.not_before, 'ap2.execution_date', 'execution_date.not_before');
        if (start < nb) refuse('ap2.execution_date', `execution is before not_before ${c.not_before}`);
      }
      if (c.not_after !== undefined) {
        const [, na] = instantRange(c.not_after, 'ap2.execution_date', 'execution_date.not_after');
        if (end > na) refuse('ap2.execution_date', `execution is after not_after ${c.not_after}`);
      }
    },
  ],
  'payment.budget': [
    'ap2.budget',
    (c, { bound, usage }) => {
      if (c.currency !== bound.currency)
        refuse('ap2.budget', `budget.currency ${JSON.stringify(c.currency)} is not the payment's ${bound.currency}`);
      const maxMinor = typeof c.max === 'number' ? majorToMinor(c.max, bound.exponent) : null;
      if (maxMinor === null)
        return refuse('ap2.budget', `budget.max must be a non-negative number of major units, whole in ${bound.currency} minor units`);
      const step = 10n ** BigInt(6 - bound.exponent);
      const spentMinor = (usage.spent + step - 1n) / step;
      if (spentMinor + bound.minor > maxMinor)
        refuse('ap2.budget', `amount ${bound.minor} would exceed the budget: ${spentMinor} of ${maxMinor} minor units already spent`);
    },
  ],
  'payment.agent_recurrence': [
    'ap2.agent_recurrence',
    (c, { usage, now }) => {
      if (typeof c.frequency !== 'string' || !FREQUENCIES.includes(c.frequency))
        refuse('ap2.agent_recurrence', `agent_recurrence.frequency must be one of ${FREQUENCIES.join(', ')}`);
      if (c.max_occurrences !== undefined && (!integer(c.max_occurrences) || (c.max_occurrences as number) < 0))
        refuse('ap2.agent_recurrence', 'agent_recurrence.max_occurrences must be a non-negative integer');
      if (c.max_occurrences !== undefined && usage.occurrences >= (c.max_occurrences as number))
        refuse('ap2.agent_recurrence', `the mandate's ${c.max_occurrences} occurrences are used up`);
      if (usage.lastAt && c.frequency !== 'ON_DEMAND') {
        const next = nextAllowed(c.frequency as string, usage.lastAt);
        if (now < next)
          refuse(
            'ap2.agent_recurrence',
            `a ${c.frequency} mandate was used at ${usage.lastAt.toISOString()}; next from ${next.toISOString()}`,
          );
      }
    },
  ],
  'payment.reference': [
    'ap2.reference',
    (c, { checkoutHash }) => {
      if (typeof c.conditional_transaction_id !== 'string') refuse('ap2.reference', 'reference.conditional_transaction_id is required');
      if (checkoutHash === null) refuse('ap2.reference', 'the mandate names a checkout (payment.reference): send ap2.checkoutMandate');
      if (checkoutHash !== c.conditional_transaction_id)
        refuse('ap2.reference', 'ap2.checkoutMandate is not the checkout the mandate names (conditional_transaction_id)');
    },
  ],
};

/**
 * Every constraint of the open mandate, in order (the AP2 guide (ap2.md in the repository docs) §4); the first that fails is thrown
 * naming it. An unknown type fails closed; recurrence needs amount_range and budget beside it, as
 * AP2's reference code requires.
 */
export function evaluateConstraints(open: Obj, ctx: ConstraintContext): void {
  const list = open.constraints;
  if (!Array.isArray(list)) {
    refuse('ap2.constraints', 'the open mandate has no constraints array');
    return;
  }
  const types = list.map((c) => (isObj(c) ? c.type : undefined));
  if (types.includes('payment.agent_recurrence') && !(types.includes('payment.amount_range') && types.includes('payment.budget')))
    refuse('ap2.agent_recurrence', 'agent_recurrence needs an amount_range and a budget constraint beside it');
  list.forEach((c: unknown, i) => {
    if (!isObj(c) || typeof c.type !== 'string') {
      refuse('ap2.constraints', `constraints[${i}] has no type`);
      return;
    }
    // Own keys only: `constructor`, `__proto__` or `toString` is an unknown type, not Object.prototype's.
    const entry = Object.hasOwn(EVALUATORS, c.type) ? EVALUATORS[c.type] : undefined;
    if (!entry) {
      refuse('ap2.constraints', `constraints[${i}] is of unknown type ${JSON.stringify(c.type)}: refused (fail closed)`);
      return;
    }
    entry[1](c, ctx);
  });
}
