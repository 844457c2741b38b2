// AP2_ISSUERS, AP2_AUDIENCE, AP2_PISP, AP2_RECEIPT_KEY (docs/ap2.md §1, §7): which issuers' AP2 mandates this
// service accepts, the audience their closed mandates must name, and its identity as a PISP. Pure:
// parsed with the rest of the config; the Node edge reads the files the sources name.
import type { Pisp } from '@escrow-settlement/protocol/ap2/constraints';

export interface Ap2Settings {
  /** AP2_ISSUERS as given (`file:<path>` of a JWKS); absent: AP2 is off. */
  ap2IssuersSource?: string;
  /** AP2_AUDIENCE; absent: the service's PUBLIC_URL. */
  ap2Audience?: string;
  /** AP2_PISP: this service's {legal_name, brand_name, domain_name}; null when not configured. */
  ap2Pisp: Pisp | null;
  /** AP2_RECEIPT_KEY as given (`file:<path>` of a P-256 private key, JWK or PEM); absent: generated under DATA_DIR/keys. */
  ap2ReceiptKeySource?: string;
}

type Fail = (variable: string, message: string) => Error;
type Env = Record<string, string | undefined>;

function fileSource(raw: string | undefined, name: string, what: string, fail: Fail): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!raw.startsWith('file:') || raw.length === 5)
    throw fail(name, `must be file:<path> of ${what}, got ${JSON.stringify(raw.slice(0, 200))}`);
  return raw;
}

function pisp(env: Env, fail: Fail): Pisp | null {
  const raw = env.AP2_PISP;
  if (raw === undefined || raw === '') return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    v = null;
  }
  const fields = ['legal_name', 'brand_name', 'domain_name'];
  const o = v as Record<string, unknown>;
  if (
    typeof v !== 'object' ||
    v === null ||
    Array.isArray(v) ||
    Object.keys(o).length !== 3 ||
    !fields.every((f) => typeof o[f] === 'string' && (o[f] as string).length > 0)
  )
    throw fail(
      'AP2_PISP',
      'must be JSON {"legal_name": "...", "brand_name": "...", "domain_name": "..."} with exactly those three non-empty strings',
    );
  return { legal_name: o.legal_name as string, brand_name: o.brand_name as string, domain_name: o.domain_name as string };
}

export function parseAp2Settings(env: Env, fail: Fail): Ap2Settings {
  const audience = env.AP2_AUDIENCE || undefined;
  if (audience !== undefined && (audience.length > 2048 || /\s/.test(audience)))
    throw fail('AP2_AUDIENCE', 'must be a string of at most 2048 characters without spaces (the aud closed mandates name)');
  return {
    ap2IssuersSource: fileSource(env.AP2_ISSUERS, 'AP2_ISSUERS', 'a JWKS of trusted P-256 issuer keys', fail),
    ap2Audience: audience,
    ap2Pisp: pisp(env, fail),
    ap2ReceiptKeySource: fileSource(env.AP2_RECEIPT_KEY, 'AP2_RECEIPT_KEY', 'a P-256 private key (JWK or PEM)', fail),
  };
}
