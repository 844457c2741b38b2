// AP2 v0.2 mandates minted the way AP2's reference SDK shapes them, with node:crypto (OpenSSL) and none of the service's code:
// open Payment Mandates signed by an issuer key, closed ones signed by the agent key their cnf names, joined as one chain.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

export const b64u = (b: Uint8Array | string) => Buffer.from(b).toString('base64url');
export const sdHash = (s: string) => createHash('sha256').update(s, 'ascii').digest('base64url');
export const sha256hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export interface P256 {
  privateKey: KeyObject;
  jwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string; kid?: string };
}

export function p256Key(kid?: string): P256 {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' }) as { kty: 'EC'; crv: 'P-256'; x: string; y: string };
  return { privateKey, jwk: { kty, crv, x, y, ...(kid ? { kid } : {}) } };
}

export const jwks = (...keys: P256[]) => ({ keys: keys.map((k) => k.jwk) });

/** A compact ES256 JWS (RFC 7515) with the raw r‖s signature RFC 7518 §3.4 asks for. */
export function jws(header: object, payload: object, key: KeyObject): string {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(payload))}`;
  return `${input}.${b64u(sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }))}`;
}

/** An array-element disclosure [salt, value] (RFC 9901 §4.2.2) and its digest. */
export function disclose(value: unknown, edit: (json: string) => string = (j) => j): { disclosure: string; digest: string } {
  const disclosure = b64u(edit(JSON.stringify([b64u(randomBytes(16)), value])));
  return { disclosure, digest: sdHash(disclosure) };
}

/** `jwt~d1~…~` with the mandate as the one disclosed element of delegate_payload, as AP2's SDK issues it. */
export function sdJwt(
  header: object,
  mandate: object,
  key: KeyObject,
  extra: object = {},
  more: string[] = [],
  edit?: (json: string) => string,
): string {
  const d = disclose(mandate, edit);
  const jwt = jws(header, { delegate_payload: [{ '...': d.digest }], _sd_alg: 'sha-256', ...extra }, key);
  return `${jwt}~${[...more, d.disclosure].map((x) => `${x}~`).join('')}`;
}

export interface OpenOpts {
  issuer: P256;
  agent: P256;
  constraints: object[];
  iat?: number;
  exp?: number;
  extra?: Record<string, unknown>;
  /** Rewrites the mandate's disclosure JSON text before it is encoded (a value JSON.stringify cannot make). */
  edit?: (json: string) => string;
}

export function openMandate(o: OpenOpts): string {
  const now = Math.floor(Date.now() / 1000);
  const { kid: _k, ...cnf } = o.agent.jwk;
  return sdJwt(
    { alg: 'ES256', typ: 'example+sd-jwt', kid: o.issuer.jwk.kid },
    {
      vct: 'mandate.payment.open.1',
      constraints: o.constraints,
      cnf: { jwk: cnf },
      iat: o.iat ?? now - 10,
      exp: o.exp ?? now + 3600,
      ...(o.extra ?? {}),
    },
    o.issuer.privateKey,
    {},
    [],
    o.edit,
  );
}

export interface ClosedOpts {
  agent: P256;
  open: string;
  aud: string;
  nonce: string;
  transactionId?: string;
  payeeId: string;
  amount: number;
  currency: string;
  iat?: number;
  /** Overrides of the closed mandate's claims (undefined values delete them). */
  mandate?: Record<string, unknown>;
  /** Overrides of the key-bound JWT's own claims. */
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
  /** Rewrites the mandate's disclosure JSON text before it is encoded. */
  edit?: (json: string) => string;
}

export function closedMandate(c: ClosedOpts): string {
  const mandate: Record<string, unknown> = {
    vct: 'mandate.payment.1',
    transaction_id: c.transactionId ?? b64u(randomBytes(32)),
    payee: { id: c.payeeId, name: 'Demo Merchant', website: 'https://merchant.example' },
    payment_amount: { amount: c.amount, currency: c.currency },
    payment_instrument: { id: 'card-1', type: 'card', description: 'Card ending 4242' },
  };
  for (const [k, v] of Object.entries(c.mandate ?? {}))
    if (v === undefined) delete mandate[k];
    else mandate[k] = v;
  const claims: Record<string, unknown> = {
    iat: c.iat ?? Math.floor(Date.now() / 1000),
    aud: c.aud,
    nonce: c.nonce,
    sd_hash: sdHash(c.open),
  };
  for (const [k, v] of Object.entries(c.claims ?? {}))
    if (v === undefined) delete claims[k];
    else claims[k] = v;
  return sdJwt({ alg: 'ES256', typ: 'kb+sd-jwt', ...(c.header ?? {}) }, mandate, c.agent.privateKey, claims, [], c.edit);
}

/** JSON text of `levels` nested objects and arrays around "x", built as text: JSON.stringify recurses and would overflow. */
export const nestedJson = (levels: number) => {
  let open = '';
  let close = '';
  for (let i = 0; i < levels; i++) {
    open += i % 2 ? '[' : '{"v":';
    close = (i % 2 ? ']' : '}') + close;
  }
  return `${open}"x"${close}`;
};

/** open~…~~closed~…~: the open token ends in '~', so one more joins them. */
export const chain = (open: string, closed: string) => `${open}~${closed}`;

/** An open Checkout Mandate issued by `issuer`, and its hash in sd_hash form (payment.reference's conditional_transaction_id). */
export function openCheckout(issuer: P256, agent: P256): { token: string; hash: string } {
  const { kid: _k, ...cnf } = agent.jwk;
  const token = sdJwt(
    { alg: 'ES256', typ: 'example+sd-jwt', kid: issuer.jwk.kid },
    {
      vct: 'mandate.checkout.open.1',
      constraints: [
        { type: 'checkout.line_items', items: [{ id: 'l1', acceptable_items: [{ id: 'sku-1', title: 'A thing' }], quantity: 1 }] },
      ],
      cnf: { jwk: cnf },
    },
    issuer.privateKey,
  );
  return { token, hash: sdHash(token) };
}
