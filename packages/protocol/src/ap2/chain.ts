// Verifying an AP2 v0.2 Payment Mandate chain `open~disclosures~~closed~disclosures~` against trusted issuer keys (the AP2 guide (ap2.md in the repository docs) §2); Web APIs only.
import { sha256Hex } from '../crypto/hash.ts';
import { utf8 } from '../crypto/bytes.ts';
import { b64uSha256, jwkPublicKey, lowSForm, verifyEs256 } from './jose.ts';
import { Ap2Refusal, delegateItem, parsePresented, resolveDisclosures, type PresentedSdJwt } from './sdjwt.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const OPEN_PAYMENT_VCT = 'mandate.payment.open.1';
export const CLOSED_PAYMENT_VCT = 'mandate.payment.1';
export const OPEN_CHECKOUT_VCT = 'mandate.checkout.open.1';
/** The terminal hop's `typ` values AP2's reference code accepts. */
const TERMINAL_TYP = ['kb+sd-jwt', 'kb-sd-jwt'];
/** How far in the future an `iat` may be (clock skew between the agent and this verifier). */
export const IAT_SKEW_SECONDS = 60;

/** Trusted issuer keys by `kid`, each an uncompressed P-256 point (see ap2Issuers). */
export type Ap2Issuers = ReadonlyMap<string, Uint8Array>;

/** A JWKS `{keys: [...]}` of P-256 issuer keys, each with a distinct `kid`; a TypeError names the bad entry. */
export function ap2Issuers(jwks: unknown, name = 'jwks'): Map<string, Uint8Array> {
  if (!isObj(jwks) || !Array.isArray(jwks.keys)) throw new TypeError(`${name} must be a JWKS: {"keys": [JWK, ...]}`);
  const out = new Map<string, Uint8Array>();
  jwks.keys.forEach((k, i) => {
    const at = `${name}.keys[${i}]`;
    if (!isObj(k) || typeof k.kid !== 'string' || k.kid === '') throw new TypeError(`${at} must have a kid`);
    if (out.has(k.kid)) throw new TypeError(`${at}: kid ${JSON.stringify(k.kid)} is listed twice`);
    out.set(k.kid, jwkPublicKey(k, at));
  });
  if (out.size === 0) throw new TypeError(`${name} lists no key`);
  return out;
}

export interface VerifiedChain {
  /** The open mandate (the disclosed delegate object of the issuer-signed token). */
  open: Obj;
  /** The closed mandate (the disclosed delegate object of the agent-signed token). */
  closed: Obj;
  /** The agent-signed token's own claims: aud, nonce, iat, sd_hash. */
  binding: { aud: string; nonce: string; iat: number };
  kid: string;
  /** sha256 hex of each presented token, its trailing '~' included. */
  openHash: string;
  closedHash: string;
  /** sd_hash form (base64url sha256) of the closed token: the receipt's reference. */
  closedSdHash: string;
  /** sha256 hex of the open issuer-signed JWT (signature in low-S form): the key of the mandate's budget and recurrence. */
  budgetKey: string;
}

export interface ChainOptions {
  issuers: Ap2Issuers;
  /** Seconds since the epoch at which the chain must be valid. */
  now: number;
  /** The `aud` the closed mandate must name; omitted offline, where the bundle binds the chain instead. */
  audience?: string;
}

/** Splits `open~…~~closed~…~` into its two presented tokens (the separator is the empty segment between them). */
export function splitChain(chain: string, name = 'ap2.paymentMandate'): [PresentedSdJwt, PresentedSdJwt] {
  if (typeof chain !== 'string' || chain.length === 0) throw new Ap2Refusal('ap2.format', `${name} must be a string`, true);
  const parts = chain.split('~~');
  if (parts.length !== 2)
    throw new Ap2Refusal(
      'ap2.format',
      `${name} must be two SD-JWTs joined as open~disclosures~~closed~disclosures~ (found ${parts.length} parts)`,
      true,
    );
  return [parsePresented(`${parts[0]}~`, `${name} (open mandate)`), parsePresented(parts[1], `${name} (closed mandate)`)];
}

function checkTimes(claims: Obj, now: number, what: string): void {
  for (const [claim, field] of [
    ['iat', 'ap2.iat'],
    ['exp', 'ap2.exp'],
  ] as const) {
    const v = claims[claim];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new Ap2Refusal(field, `${what}.${claim} must be a number (seconds since the epoch)`);
  }
  if (typeof claims.iat === 'number' && claims.iat > now + IAT_SKEW_SECONDS)
    throw new Ap2Refusal('ap2.iat', `${what}.iat ${claims.iat} is in the future (now ${now})`);
  if (typeof claims.exp === 'number' && now >= claims.exp)
    throw new Ap2Refusal('ap2.exp', `${what} expired at ${new Date(claims.exp * 1000).toISOString()}`);
}

/** An open mandate token verified by a trusted issuer: its disclosed mandate and the agent key its `cnf` names. */
export function verifyIssued(
  token: PresentedSdJwt,
  issuers: Ap2Issuers,
  now: number,
  vct: string,
  what: string,
): { mandate: Obj; kid: string; cnf: Uint8Array | null } {
  const { header } = token.jws;
  if (header.alg !== 'ES256')
    throw new Ap2Refusal('ap2.signature', `${what} is signed with ${JSON.stringify(header.alg)}; only ES256 is accepted`);
  const kid = header.kid;
  if (typeof kid !== 'string') throw new Ap2Refusal('ap2.issuer', `${what} names no kid: its issuer cannot be matched to a trusted key`);
  const key = issuers.get(kid);
  if (!key) throw new Ap2Refusal('ap2.issuer', `${what} is signed by kid ${JSON.stringify(kid)}, which is not a trusted issuer key`);
  if (!verifyEs256(token.jws, key))
    throw new Ap2Refusal('ap2.signature', `${what}'s issuer signature does not verify with kid ${JSON.stringify(kid)}`);
  const resolved = resolveDisclosures(token, what);
  const mandate = delegateItem(resolved, what);
  if (mandate.vct !== vct)
    throw new Ap2Refusal('ap2.vct', `${what}.vct must be ${JSON.stringify(vct)} (got ${JSON.stringify(mandate.vct)})`);
  checkTimes(resolved, now, what);
  checkTimes(mandate, now, what);
  let cnf: Uint8Array | null = null;
  if (mandate.cnf !== undefined) {
    try {
      cnf = jwkPublicKey(isObj(mandate.cnf) ? mandate.cnf.jwk : undefined, `${what}.cnf.jwk`);
    } catch (err) {
      throw new Ap2Refusal('ap2.cnf', (err as Error).message);
    }
  }
  return { mandate, kid, cnf };
}

/**
 * The whole chain, in the order of the AP2 guide (ap2.md in the repository docs) §2: the open token's ES256 signature by a trusted
 * `kid`, its disclosures, `vct` and times, its `cnf.jwk`; the closed token's ES256 signature by that
 * key, its `typ`, disclosures, `vct`, `sd_hash` over the presented open token, `aud`, `nonce` and
 * times. The first failure is thrown as an Ap2Refusal naming it.
 */
export function verifyPaymentChain(chain: string, opts: ChainOptions): VerifiedChain {
  const [openTok, closedTok] = splitChain(chain);
  const issued = verifyIssued(openTok, opts.issuers, opts.now, OPEN_PAYMENT_VCT, 'open mandate');
  if (!issued.cnf) throw new Ap2Refusal('ap2.cnf', 'open mandate has no cnf.jwk: it binds no agent key');
  const { header } = closedTok.jws;
  if (header.alg !== 'ES256')
    throw new Ap2Refusal('ap2.signature', `closed mandate is signed with ${JSON.stringify(header.alg)}; only ES256 is accepted`);
  if (typeof header.typ !== 'string' || !TERMINAL_TYP.includes(header.typ))
    throw new Ap2Refusal('ap2.typ', `closed mandate typ must be one of ${TERMINAL_TYP.join(', ')} (got ${JSON.stringify(header.typ)})`);
  if (!verifyEs256(closedTok.jws, issued.cnf))
    throw new Ap2Refusal('ap2.signature', "closed mandate's signature does not verify with the agent key the open mandate's cnf.jwk names");
  const claims = resolveDisclosures(closedTok, 'closed mandate');
  if (claims.sd_hash !== b64uSha256(openTok.presented))
    throw new Ap2Refusal('ap2.sd_hash', 'closed mandate sd_hash is not the base64url SHA-256 of the presented open mandate');
  const closed = delegateItem(claims, 'closed mandate');
  if (closed.vct !== CLOSED_PAYMENT_VCT)
    throw new Ap2Refusal('ap2.vct', `closed mandate.vct must be ${JSON.stringify(CLOSED_PAYMENT_VCT)} (got ${JSON.stringify(closed.vct)})`);
  if (closed.cnf !== undefined)
    throw new Ap2Refusal('ap2.cnf', 'closed mandate carries a cnf: a terminal mandate may not delegate further');
  if (typeof claims.aud !== 'string') throw new Ap2Refusal('ap2.aud', 'closed mandate has no aud (a string)');
  if (opts.audience !== undefined && claims.aud !== opts.audience)
    throw new Ap2Refusal(
      'ap2.aud',
      `closed mandate aud ${JSON.stringify(claims.aud)} is not this service's audience ${JSON.stringify(opts.audience)}`,
    );
  if (typeof claims.nonce !== 'string' || claims.nonce === '') throw new Ap2Refusal('ap2.nonce', 'closed mandate has no nonce');
  if (typeof claims.iat !== 'number') throw new Ap2Refusal('ap2.iat', 'closed mandate has no iat');
  checkTimes(claims, opts.now, 'closed mandate');
  checkTimes(closed, opts.now, 'closed mandate');
  return {
    open: issued.mandate,
    closed,
    binding: { aud: claims.aud, nonce: claims.nonce, iat: claims.iat },
    kid: issued.kid,
    openHash: sha256Hex(utf8(openTok.presented)),
    closedHash: sha256Hex(utf8(closedTok.presented)),
    closedSdHash: b64uSha256(closedTok.presented),
    budgetKey: sha256Hex(utf8(lowSForm(openTok.jwt))),
  };
}

/** An open Checkout Mandate (`payment.reference`'s target) issued by a trusted key; returns its sd_hash-form hash. */
export function verifyOpenCheckout(token: string, issuers: Ap2Issuers, now: number): string {
  if (typeof token !== 'string' || token.includes('~~'))
    throw new Ap2Refusal('ap2.format', 'ap2.checkoutMandate must be one presented SD-JWT (jwt~disclosures~)', true);
  const tok = parsePresented(token, 'ap2.checkoutMandate');
  verifyIssued(tok, issuers, now, OPEN_CHECKOUT_VCT, 'checkout mandate');
  return b64uSha256(tok.presented);
}
