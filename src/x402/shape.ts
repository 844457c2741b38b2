// The shapes of x402 payment payloads, v1 and v2: the first way a decoded header is not one, named by its path (docs/protocol.md §2.6: unknown fields are refused).
import { isHex64 } from '@escrow-settlement/protocol/crypto/bytes';

export type Problem = string | null;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
/** A decimal amount as the service writes them (docs/protocol.md §2.3). */
export const VALUE = /^\d{1,18}(\.\d{1,6})?$/;

/** Exactly `required` (and any of `optional`), no others. */
function fields(o: unknown, at: string, required: readonly string[], optional: readonly string[] = []): Problem {
  if (!isObj(o)) return `${at} must be a JSON object`;
  for (const k of Object.keys(o)) if (!required.includes(k) && !optional.includes(k)) return `${at}.${k} is not a known field`;
  for (const k of required) if (!(k in o)) return `${at}.${k} is required`;
  return null;
}

function str(v: unknown, at: string, max: number): Problem {
  return typeof v === 'string' && v.length >= 1 && v.length <= max ? null : `${at} must be a string of 1 to ${max} characters`;
}

const first = (...ps: Array<() => Problem>): Problem => {
  for (const p of ps) {
    const r = p();
    if (r) return r;
  }
  return null;
};

/** The scheme payload {authorization, signature}, the same under both versions. */
function schemePayloadProblem(payload: unknown, at: string): Problem {
  const top = fields(payload, at, ['authorization', 'signature']);
  if (top) return top;
  const { authorization: a, signature } = payload as Record<string, unknown>;
  if (typeof signature !== 'string') return `${at}.signature must be a hex string`;
  const aa = `${at}.authorization`;
  const fieldProblem = fields(a, aa, ['from', 'to', 'value', 'asset', 'resource', 'nonce', 'validBefore']);
  if (fieldProblem) return fieldProblem;
  const auth = a as Record<string, unknown>;
  if (!isHex64(auth.from)) return `${aa}.from must be 64 lowercase hex characters (the payer's public key)`;
  if (!isHex64(auth.to)) return `${aa}.to must be 64 lowercase hex characters (the payee's public key)`;
  if (typeof auth.value !== 'string' || !VALUE.test(auth.value))
    return `${aa}.value must be a decimal string with at most 6 fraction digits, e.g. "0.01"`;
  const p = str(auth.asset, `${aa}.asset`, 64) ?? str(auth.resource, `${aa}.resource`, 2048);
  if (p) return p;
  if (!isHex64(auth.nonce)) return `${aa}.nonce must be 64 lowercase hex characters`;
  if (typeof auth.validBefore !== 'string' || !ISO.test(auth.validBefore) || Number.isNaN(Date.parse(auth.validBefore))) {
    return `${aa}.validBefore must be an ISO 8601 date-time with a zone`;
  }
  return null;
}

/** x402 v1 (X-PAYMENT): {x402Version, scheme, network, payload}. */
export function v1Problem(p: unknown): Problem {
  const top = fields(p, 'payment', ['x402Version', 'scheme', 'network', 'payload']);
  if (top) return top;
  const o = p as Record<string, unknown>;
  return first(
    () => str(o.scheme, 'payment.scheme', 64),
    () => str(o.network, 'payment.network', 64),
    () => schemePayloadProblem(o.payload, 'payment.payload'),
  );
}

/** x402 v2 (PAYMENT-SIGNATURE): {x402Version, resource?, accepted, payload, extensions?} (x402 v2 §5.2). */
export function v2Problem(p: unknown): Problem {
  const top = fields(p, 'payment', ['x402Version', 'accepted', 'payload'], ['resource', 'extensions']);
  if (top) return top;
  const o = p as Record<string, unknown>;
  return first(
    () =>
      o.resource === undefined
        ? null
        : (fields(o.resource, 'payment.resource', ['url'], ['description', 'mimeType', 'serviceName', 'tags', 'iconUrl']) ??
          str((o.resource as Record<string, unknown>).url, 'payment.resource.url', 2048)),
    () => (o.extensions === undefined || isObj(o.extensions) ? null : 'payment.extensions must be a JSON object'),
    () => fields(o.accepted, 'payment.accepted', ['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds', 'extra']),
    () => {
      const a = o.accepted as Record<string, unknown>;
      for (const k of ['scheme', 'network', 'amount', 'asset', 'payTo'] as const) {
        const q = str(a[k], `payment.accepted.${k}`, 2048);
        if (q) return q;
      }
      if (!Number.isInteger(a.maxTimeoutSeconds)) return 'payment.accepted.maxTimeoutSeconds must be an integer';
      return isObj(a.extra) ? null : 'payment.accepted.extra must be a JSON object';
    },
    () => schemePayloadProblem(o.payload, 'payment.payload'),
  );
}
