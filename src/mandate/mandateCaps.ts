// Pure part of mandate enforcement: strict MandateCaps validation and the cap check at escrow creation (docs/protocol.md §8).

import { AppError, badRequest } from '../errors.ts';
import { formatAmount, parseAmount } from '../units/amounts.ts';
import { HEX64_RE, parseIsoDateTime, requireIsoDateTime } from '../terms/checks.ts';
import { isJsonObject, keyPath, rejectUnknownFields } from '../terms/predicates.ts';
import type { MandateCaps } from '@escrow-settlement/protocol/resources';

/** MandateCaps, docs/protocol.md §8 (the wire shape lives in the client package). Amounts and expiresAt are kept as the principal wrote them (the signature covers them). */
export type { MandateCaps };

/** docs/protocol.md §2.6: asset format and caps. */
export const ASSET_RE = /^[A-Za-z0-9._:-]+$/;
export const MAX_ASSET_CHARS = 64;
export const MAX_ALLOWED_ASSETS = 100;
export const MAX_ALLOWED_COUNTERPARTIES = 1000;

const CAPS_FIELDS = ['agent', 'perEscrowMax', 'cumulativeMax', 'allowedAssets', 'allowedCounterparties', 'expiresAt'] as const;

function requiredField(obj: Record<string, unknown>, field: string, path: string): unknown {
  if (!Object.hasOwn(obj, field) || obj[field] === undefined) throw badRequest(`${keyPath(path, field)} is required`);
  return obj[field];
}

function requireHex64(v: unknown, path: string): string {
  if (typeof v !== 'string' || !HEX64_RE.test(v)) throw badRequest(`${path} must be 64 lowercase hex characters (an Ed25519 public key)`);
  return v;
}

/**
 * Validate MandateCaps strictly; 400 bad_request naming the path (e.g. `caps.allowedAssets[2]`).
 * Returns a copy with only known fields and every value exactly as given, so JCS({principal, caps})
 * of the copy is the body the principal signed. `allowedCounterparties` stays absent when absent
 * and may be empty (both mean any counterparty).
 */
export function validateMandateCaps(caps: unknown, path = 'caps'): MandateCaps {
  if (!isJsonObject(caps)) throw badRequest(`${path} must be an object`);
  rejectUnknownFields(caps, CAPS_FIELDS, path);
  const agent = requireHex64(requiredField(caps, 'agent', path), `${path}.agent`);
  const perEscrowMax = requiredField(caps, 'perEscrowMax', path);
  parseAmount(perEscrowMax, `${path}.perEscrowMax`);
  const cumulativeMax = requiredField(caps, 'cumulativeMax', path);
  parseAmount(cumulativeMax, `${path}.cumulativeMax`);

  const assets = requiredField(caps, 'allowedAssets', path);
  const ap = `${path}.allowedAssets`;
  if (!Array.isArray(assets)) throw badRequest(`${ap} must be an array of asset codes`);
  if (assets.length < 1 || assets.length > MAX_ALLOWED_ASSETS) {
    throw badRequest(`${ap} must have 1 to ${MAX_ALLOWED_ASSETS} entries (got ${assets.length})`);
  }
  assets.forEach((a, i) => {
    if (typeof a !== 'string' || a.length > MAX_ASSET_CHARS || !ASSET_RE.test(a)) {
      throw badRequest(`${ap}[${i}] must be an asset code of 1 to ${MAX_ASSET_CHARS} characters from A-Z a-z 0-9 . _ : -`);
    }
  });

  let counterparties: string[] | undefined;
  if (Object.hasOwn(caps, 'allowedCounterparties') && caps.allowedCounterparties !== undefined) {
    const cs = caps.allowedCounterparties;
    const cp = `${path}.allowedCounterparties`;
    if (!Array.isArray(cs)) throw badRequest(`${cp} must be an array of public keys`);
    if (cs.length > MAX_ALLOWED_COUNTERPARTIES)
      throw badRequest(`${cp} must have at most ${MAX_ALLOWED_COUNTERPARTIES} entries (got ${cs.length})`);
    counterparties = cs.map((c, i) => requireHex64(c, `${cp}[${i}]`));
  }

  const expiresAt = requiredField(caps, 'expiresAt', path);
  requireIsoDateTime(expiresAt, `${path}.expiresAt`);

  const out: MandateCaps = {
    agent,
    perEscrowMax: perEscrowMax as string,
    cumulativeMax: cumulativeMax as string,
    allowedAssets: [...(assets as string[])],
    expiresAt: expiresAt as string,
  };
  if (counterparties !== undefined) out.allowedCounterparties = counterparties;
  return out;
}

/** What an escrow creation asks of a mandate. `spent` is the mandate's usage so far (docs/protocol.md §8). */
export type MandateRequest = {
  payer: string;
  payee: string;
  amount: bigint;
  asset: string;
  now: Date;
  spent: bigint;
};

function violation(message: string): AppError {
  return new AppError('mandate_violation', message);
}

/** remaining = cumulativeMax − spent, never below 0 (docs/protocol.md §8). */
export function mandateRemaining(caps: MandateCaps, spent: bigint): bigint {
  const rest = parseAmount(caps.cumulativeMax, 'caps.cumulativeMax') - spent;
  return rest > 0n ? rest : 0n;
}

/** The `usage` object of a fetched mandate: `{spent, remaining}` as amount strings (docs/protocol.md §8). */
export function mandateUsage(caps: MandateCaps, spent: bigint): { spent: string; remaining: string } {
  return { spent: formatAmount(spent), remaining: formatAmount(mandateRemaining(caps, spent)) };
}

/**
 * Throw 403 mandate_violation naming the first cap the escrow breaks, checked in this order:
 * agent (payer must be the bound agent), expiresAt (expired when now ≥ expiresAt), allowedAssets
 * (exact, case-sensitive), allowedCounterparties (payee; absent or empty = any), perEscrowMax
 * (amount ≤ cap), cumulativeMax (spent + amount ≤ cap). Returns normally when every cap holds.
 * `caps` must have passed validateMandateCaps.
 */
export function checkMandateCaps(caps: MandateCaps, req: MandateRequest): void {
  if (req.payer !== caps.agent) {
    throw violation(`the mandate binds agent ${caps.agent}; the escrow's payer is ${req.payer}`);
  }
  const expiresAt = parseIsoDateTime(caps.expiresAt);
  if (expiresAt === null || req.now.getTime() >= expiresAt) {
    throw violation(`the mandate expired at ${expiresAt === null ? caps.expiresAt : new Date(expiresAt).toISOString()} (expiresAt)`);
  }
  if (!caps.allowedAssets.includes(req.asset)) {
    throw violation(`asset ${JSON.stringify(req.asset)} is not in the mandate's allowedAssets (${caps.allowedAssets.join(', ')})`);
  }
  const cps = caps.allowedCounterparties;
  if (cps !== undefined && cps.length > 0 && !cps.includes(req.payee)) {
    throw violation(`payee ${req.payee} is not in the mandate's allowedCounterparties`);
  }
  const perEscrowMax = parseAmount(caps.perEscrowMax, 'caps.perEscrowMax');
  if (req.amount > perEscrowMax) {
    throw violation(`amount ${formatAmount(req.amount)} exceeds the mandate's perEscrowMax of ${formatAmount(perEscrowMax)}`);
  }
  const cumulativeMax = parseAmount(caps.cumulativeMax, 'caps.cumulativeMax');
  if (req.spent + req.amount > cumulativeMax) {
    const remaining = mandateRemaining(caps, req.spent);
    throw violation(
      `amount ${formatAmount(req.amount)} exceeds the mandate's cumulativeMax: ${formatAmount(remaining)} remaining ` +
        `(cumulativeMax ${formatAmount(cumulativeMax)}, spent ${formatAmount(req.spent)})`,
    );
  }
}
