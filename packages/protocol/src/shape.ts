// Structural checks of untrusted bundles, before any cryptography: the first problem, named by its path, or null.

type Problem = string | null;

const HEX64 = /^[0-9a-f]{64}$/;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function hex64(v: unknown, at: string): Problem {
  return typeof v === 'string' && HEX64.test(v) ? null : `${at} must be 64 lowercase hex characters`;
}

function str(v: unknown, at: string): Problem {
  return typeof v === 'string' ? null : `${at} must be a string`;
}

function count(v: unknown, at: string): Problem {
  return isCount(v) ? null : `${at} must be a non-negative whole number`;
}

/** A check of one value, named by its path; `present` says whether its key is in the object at all. */
type Check = (v: unknown, at: string, present: boolean) => Problem;
type Fields = Record<string, Check>;

/** The first field of `o`, in the order `fields` lists them, that fails its check. */
function firstField(o: Record<string, unknown>, fields: Fields, name: (key: string) => string): Problem {
  for (const [k, check] of Object.entries(fields)) {
    const p = check(o[k], name(k), k in o);
    if (p) return p;
  }
  return null;
}

/** An object whose fields pass their checks, each named `at.field`. */
function objectProblem(v: unknown, at: string, fields: Fields, what = 'an object'): Problem {
  return isObj(v) ? firstField(v, fields, (k) => `${at}.${k}`) : `${at} must be ${what}`;
}

/** An array whose every element passes `check`, each named `at[i]`. */
function listProblem(v: unknown, at: string, what: string, check: (e: unknown, at: string) => Problem): Problem {
  if (!Array.isArray(v)) return `${at} must be an array of ${what}`;
  for (let i = 0; i < v.length; i++) {
    const p = check(v[i], `${at}[${i}]`);
    if (p) return p;
  }
  return null;
}

const required: Check = (_v, at, present) => (present ? null : `${at} is required`);
const object: Check = (v, at) => (isObj(v) ? null : `${at} must be an object`);

export function signatureProblem(s: unknown, at: string): Problem {
  return objectProblem(s, at, { signer: hex64, signature: str }, 'an object {signer, signature}');
}

/** Only what verification reads is required; every other field is covered by the issuer signature. */
export function proofProblem(p: unknown, at = 'proof'): Problem {
  return objectProblem(p, at, { signature: signatureProblem, trailHead: hex64, trailLength: count });
}

export function headProblem(h: unknown, at: string): Problem {
  return objectProblem(h, at, { logSize: count, rootHash: hex64, signedAt: str, keyId: str, signature: signatureProblem });
}

const hashList: Check = (v, at) => listProblem(v, at, 'hex hashes', hex64);

export function inclusionProblem(i: unknown, at = 'inclusion'): Problem {
  return objectProblem(i, at, {
    leafIndex: count,
    leafHash: hex64,
    logSize: count,
    rootHash: hex64,
    auditPath: hashList,
    head: headProblem,
  });
}

export function consistencyProblem(c: unknown, at = 'consistency'): Problem {
  return objectProblem(c, at, { firstSize: count, secondSize: count, firstRoot: hex64, secondRoot: hex64, path: hashList });
}

const TRAIL_ENTRY: Fields = { index: count, prevHash: str, hash: str, at: str, event: str, body: required };

export function trailProblem(t: unknown, at = 'trail'): Problem {
  return listProblem(t, at, 'trail entries', (e, here) => objectProblem(e, here, TRAIL_ENTRY));
}

const ISSUER_KEY: Fields = { keyId: str, publicKey: hex64, validFrom: str };

export function issuerKeysProblem(k: unknown, at = 'issuerKeys'): Problem {
  return listProblem(k, at, 'issuer keys', (e, here) => objectProblem(e, here, ISSUER_KEY));
}

const PARTY_KINDS = [
  'mandate',
  'ap2',
  'x402',
  'delivery',
  'x402.void',
  'dispute.open',
  'dispute.evidence',
  'ruling',
  'refund',
  'refund.request',
];

const PARTY_SIGNATURE: Fields = {
  kind: (v, at) => (typeof v === 'string' && PARTY_KINDS.includes(v) ? null : `${at} must be one of ${PARTY_KINDS.join(', ')}`),
  trailIndex: count,
  publicKey: hex64,
  signedBody: object,
  signature: str,
};

/** `parties` is optional (bundles from services that did not carry the parties' signatures yet); when present, {signatures: [PartySignature]}. */
export function partiesProblem(p: unknown, at = 'parties'): Problem {
  if (p === undefined) return null;
  if (!isObj(p) || !Array.isArray(p.signatures)) return `${at} must be an object {signatures: [...]}`;
  return listProblem(p.signatures, `${at}.signatures`, 'party signatures', (s, here) => objectProblem(s, here, PARTY_SIGNATURE));
}

/** `terms` is checked by hashing it (verdict.replay); here only that it is an object when present. */
const optionalObject: Check = (v, at, present) => (!present || isObj(v) ? null : `${at} must be an object`);

/** `disclosed` is present only when asked for (`?disclose=payload`): {payload, submittedAt}. */
const disclosedProblem: Check = (v, at, present) =>
  present ? objectProblem(v, at, { payload: required, submittedAt: str }, 'an object {payload, submittedAt}') : null;

/** `adjustments` (the service's protocol documentation, §24.7): when present, an array of {proof, inclusion}. */
const adjustmentsProblem: Check = (v, at, present) =>
  present
    ? listProblem(v, at, 'adjustments {proof, inclusion}', (a, ai) =>
        objectProblem(a, ai, { proof: proofProblem, inclusion: inclusionProblem }, 'an object {proof, inclusion}'),
      )
    : null;

const BUNDLE: Fields = {
  proof: proofProblem,
  trail: trailProblem,
  inclusion: inclusionProblem,
  issuerKeys: issuerKeysProblem,
  parties: partiesProblem,
  terms: optionalObject,
  disclosed: disclosedProblem,
  adjustments: adjustmentsProblem,
};

export function bundleProblem(b: unknown): Problem {
  if (!isObj(b)) return 'bundle must be a JSON object {proof, trail, inclusion, issuerKeys, parties}';
  return firstField(b, BUNDLE, (k) => k);
}
