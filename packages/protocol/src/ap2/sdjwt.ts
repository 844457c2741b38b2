// SD-JWT (RFC 9901) as AP2 v0.2 presents it: parsing a presented token and resolving its disclosures strictly; Web APIs only.
import { b64uDecode, b64uSha256, parseJws, type Jws } from './jose.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why a chain was refused: `field` names the check (`ap2.signature`, `ap2.disclosure`, …) for the 422 answer. */
export class Ap2Refusal extends Error {
  readonly field: string;
  /** A malformed value (400) rather than one that does not verify or does not satisfy the mandate (422). */
  readonly malformed: boolean;
  constructor(field: string, message: string, malformed = false) {
    super(message);
    this.name = 'Ap2Refusal';
    this.field = field;
    this.malformed = malformed;
  }
}

export interface PresentedSdJwt {
  /** The token as presented, ending in '~' (issuer-signed JWT, then each disclosure, each followed by '~'). */
  presented: string;
  /** The issuer-signed (or key-bound) JWT alone. */
  jwt: string;
  jws: Jws;
  disclosures: string[];
}

/** Parses `jwt~d1~…~dn~` (no trailing key-binding JWT: AP2 binds by the next hop, not by a KB-JWT). */
export function parsePresented(presented: string, name: string): PresentedSdJwt {
  if (!presented.endsWith('~')) throw new Ap2Refusal('ap2.format', `${name} must end with "~" (an SD-JWT with no key-binding JWT)`, true);
  const parts = presented.slice(0, -1).split('~');
  const [jwt, ...disclosures] = parts;
  if (!jwt || disclosures.some((d) => d === '')) throw new Ap2Refusal('ap2.format', `${name} has an empty segment`, true);
  try {
    return { presented, jwt, jws: parseJws(jwt, name), disclosures };
  } catch (err) {
    throw new Ap2Refusal('ap2.format', (err as Error).message, true);
  }
}

interface Disclosure {
  text: string;
  salt: string;
  name?: string;
  value: unknown;
}

function decodeDisclosure(text: string, at: string): Disclosure {
  let arr: unknown;
  try {
    arr = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(b64uDecode(text, at)));
  } catch (err) {
    throw new Ap2Refusal('ap2.disclosure', `${at} is not base64url JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(arr) || (arr.length !== 2 && arr.length !== 3) || typeof arr[0] !== 'string')
    throw new Ap2Refusal('ap2.disclosure', `${at} must be a JSON array [salt, value] or [salt, name, value]`);
  if (arr.length === 2) return { text, salt: arr[0], value: arr[1] };
  if (typeof arr[1] !== 'string' || arr[1] === '_sd' || arr[1] === '...' || arr[1] === '_sd_alg')
    throw new Ap2Refusal('ap2.disclosure', `${at} names a claim that may not be disclosed: ${JSON.stringify(arr[1])}`);
  return { text, salt: arr[0], name: arr[1], value: arr[2] };
}

/**
 * How deep a token's claims may nest, disclosures put in place (the payload object is level 1): the
 * deepest AP2 mandate is a handful of levels, and resolving is recursive, so a deeper one is refused
 * before it can exhaust the stack.
 */
export const AP2_MAX_DEPTH = 32;

/**
 * The payload with every disclosure put in place (RFC 9901 §7.1): `_sd` digests in objects,
 * `{"...": digest}` elements in arrays, recursively. Refused, as §7.1 requires: an `_sd_alg` other
 * than sha-256, a digest met twice, a disclosure of the wrong form for where it is referenced, a
 * claim disclosed over an existing one, and a disclosure no digest references.
 * Digests no disclosure matches are decoys (or undisclosed claims) and are dropped.
 */
export function resolveDisclosures(token: PresentedSdJwt, name: string): Obj {
  const alg = token.jws.payload._sd_alg;
  if (alg !== undefined && alg !== 'sha-256')
    throw new Ap2Refusal('ap2.disclosure', `${name} uses _sd_alg ${JSON.stringify(alg)}; only sha-256 is supported`);
  const byDigest = new Map<string, Disclosure>();
  token.disclosures.forEach((d, i) => {
    const digest = b64uSha256(d);
    if (byDigest.has(digest)) throw new Ap2Refusal('ap2.disclosure', `${name} disclosure ${i} is given twice`);
    byDigest.set(digest, decodeDisclosure(d, `${name} disclosure ${i}`));
  });
  const seen = new Set<string>();
  const used = new Set<string>();
  const take = (digest: unknown): Disclosure | undefined => {
    if (typeof digest !== 'string') throw new Ap2Refusal('ap2.disclosure', `${name} has a digest that is not a string`);
    if (seen.has(digest)) throw new Ap2Refusal('ap2.disclosure', `${name} references digest ${digest} twice`);
    seen.add(digest);
    const d = byDigest.get(digest);
    if (d) used.add(digest);
    return d;
  };
  const walk = (v: unknown, level: number): unknown => {
    if (typeof v === 'object' && v !== null && level > AP2_MAX_DEPTH)
      throw new Ap2Refusal('ap2.depth', `${name} nests objects and arrays deeper than ${AP2_MAX_DEPTH} levels`);
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      for (const el of v) {
        if (isObj(el) && Object.keys(el).length === 1 && Object.hasOwn(el, '...')) {
          const d = take(el['...']);
          if (!d) continue;
          if (d.name !== undefined) throw new Ap2Refusal('ap2.disclosure', `${name}: an array element's digest names a claim disclosure`);
          out.push(walk(d.value, level + 1));
        } else out.push(walk(el, level + 1));
      }
      return out;
    }
    if (!isObj(v)) return v;
    const out: Obj = {};
    for (const [k, val] of Object.entries(v)) if (k !== '_sd') out[k] = walk(val, level + 1);
    if (v._sd !== undefined) {
      if (!Array.isArray(v._sd)) throw new Ap2Refusal('ap2.disclosure', `${name}: _sd must be an array of digests`);
      for (const digest of v._sd) {
        const d = take(digest);
        if (!d) continue;
        if (d.name === undefined) throw new Ap2Refusal('ap2.disclosure', `${name}: an _sd digest names an array element disclosure`);
        if (Object.hasOwn(out, d.name))
          throw new Ap2Refusal('ap2.disclosure', `${name}: claim ${d.name} is disclosed over an existing one`);
        out[d.name] = walk(d.value, level + 1);
      }
    }
    return out;
  };
  const resolved = walk(token.jws.payload, 1) as Obj;
  delete resolved._sd_alg;
  const unused = token.disclosures.findIndex((d) => !used.has(b64uSha256(d)));
  if (unused >= 0) throw new Ap2Refusal('ap2.disclosure', `${name} disclosure ${unused} is not referenced by any digest of the token`);
  return resolved;
}

/**
 * The mandate a resolved AP2 payload carries: the one disclosed object of `delegate_payload`
 * (AP2 v0.2 puts the whole mandate there), or the payload itself when it has no `delegate_payload`.
 */
export function delegateItem(resolved: Obj, name: string): Obj {
  const dp = resolved.delegate_payload;
  if (dp === undefined) return resolved;
  if (!Array.isArray(dp) || dp.length !== 1 || !isObj(dp[0]))
    throw new Ap2Refusal('ap2.disclosure', `${name}: delegate_payload must hold exactly one disclosed mandate object`);
  return dp[0];
}
