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

function first(...problems: Problem[]): Problem {
  for (const p of problems) if (p) return p;
  return null;
}

export function signatureProblem(s: unknown, at: string): Problem {
  if (!isObj(s)) return `${at} must be an object {signer, signature}`;
  return first(hex64(s.signer, `${at}.signer`), str(s.signature, `${at}.signature`));
}

/** Only what verification reads is required; every other field is covered by the issuer signature. */
export function proofProblem(p: unknown, at = 'proof'): Problem {
  if (!isObj(p)) return `${at} must be an object`;
  return first(
    signatureProblem(p.signature, `${at}.signature`),
    hex64(p.trailHead, `${at}.trailHead`),
    count(p.trailLength, `${at}.trailLength`),
  );
}

export function headProblem(h: unknown, at: string): Problem {
  if (!isObj(h)) return `${at} must be an object`;
  return first(
    count(h.logSize, `${at}.logSize`),
    hex64(h.rootHash, `${at}.rootHash`),
    str(h.signedAt, `${at}.signedAt`),
    str(h.keyId, `${at}.keyId`),
    signatureProblem(h.signature, `${at}.signature`),
  );
}

function hashList(v: unknown, at: string): Problem {
  if (!Array.isArray(v)) return `${at} must be an array of hex hashes`;
  return first(...v.map((h, i) => hex64(h, `${at}[${i}]`)));
}

export function inclusionProblem(i: unknown, at = 'inclusion'): Problem {
  if (!isObj(i)) return `${at} must be an object`;
  return first(
    count(i.leafIndex, `${at}.leafIndex`),
    hex64(i.leafHash, `${at}.leafHash`),
    count(i.logSize, `${at}.logSize`),
    hex64(i.rootHash, `${at}.rootHash`),
    hashList(i.auditPath, `${at}.auditPath`),
    headProblem(i.head, `${at}.head`),
  );
}

export function consistencyProblem(c: unknown, at = 'consistency'): Problem {
  if (!isObj(c)) return `${at} must be an object`;
  return first(
    count(c.firstSize, `${at}.firstSize`),
    count(c.secondSize, `${at}.secondSize`),
    hex64(c.firstRoot, `${at}.firstRoot`),
    hex64(c.secondRoot, `${at}.secondRoot`),
    hashList(c.path, `${at}.path`),
  );
}

export function trailProblem(t: unknown, at = 'trail'): Problem {
  if (!Array.isArray(t)) return `${at} must be an array of trail entries`;
  for (let i = 0; i < t.length; i++) {
    const e = t[i];
    const here = `${at}[${i}]`;
    if (!isObj(e)) return `${here} must be an object`;
    const p = first(
      count(e.index, `${here}.index`),
      str(e.prevHash, `${here}.prevHash`),
      str(e.hash, `${here}.hash`),
      str(e.at, `${here}.at`),
      str(e.event, `${here}.event`),
      'body' in e ? null : `${here}.body is required`,
    );
    if (p) return p;
  }
  return null;
}

export function issuerKeysProblem(k: unknown, at = 'issuerKeys'): Problem {
  if (!Array.isArray(k)) return `${at} must be an array of issuer keys`;
  for (let i = 0; i < k.length; i++) {
    const e = k[i];
    const here = `${at}[${i}]`;
    if (!isObj(e)) return `${here} must be an object`;
    const p = first(str(e.keyId, `${here}.keyId`), hex64(e.publicKey, `${here}.publicKey`), str(e.validFrom, `${here}.validFrom`));
    if (p) return p;
  }
  return null;
}

const PARTY_KINDS = ['mandate', 'x402', 'delivery', 'dispute.open', 'dispute.evidence', 'ruling'];

/** `parties` is optional (bundles from services that did not carry the parties' signatures yet); when present, {signatures: [PartySignature]}. */
export function partiesProblem(p: unknown, at = 'parties'): Problem {
  if (p === undefined) return null;
  if (!isObj(p) || !Array.isArray(p.signatures)) return `${at} must be an object {signatures: [...]}`;
  for (let i = 0; i < p.signatures.length; i++) {
    const s = p.signatures[i];
    const here = `${at}.signatures[${i}]`;
    if (!isObj(s)) return `${here} must be an object`;
    const q = first(
      typeof s.kind === 'string' && PARTY_KINDS.includes(s.kind) ? null : `${here}.kind must be one of ${PARTY_KINDS.join(', ')}`,
      count(s.trailIndex, `${here}.trailIndex`),
      hex64(s.publicKey, `${here}.publicKey`),
      isObj(s.signedBody) ? null : `${here}.signedBody must be an object`,
      str(s.signature, `${here}.signature`),
    );
    if (q) return q;
  }
  return null;
}

export function bundleProblem(b: unknown): Problem {
  if (!isObj(b)) return 'bundle must be a JSON object {proof, trail, inclusion, issuerKeys, parties}';
  return first(
    proofProblem(b.proof),
    trailProblem(b.trail),
    inclusionProblem(b.inclusion),
    issuerKeysProblem(b.issuerKeys),
    partiesProblem(b.parties),
  );
}
