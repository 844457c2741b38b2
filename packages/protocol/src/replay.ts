// Replaying a bundle's verdict (the service's protocol documentation, §11.5): the terms hash to the proof's termsHash, the
// disclosed payload to the delivery's contentHash, and every check of the terms, re-run with the
// same code the service judged with (terms/evaluate), gives the verdict the trail records. Web APIs only.
import { canonicalize } from './crypto/jcs.ts';
import { sha256Hex } from './crypto/hash.ts';
import { utf8 } from './crypto/bytes.ts';
import { evaluateChecks, type DeliveryFacts } from './terms/evaluate.ts';
import type { TermCheck, Terms } from './types.ts';
import type { Bundle, Check, TrailEntry } from './types.ts';
import { amountMicro } from './amounts.ts';

/**
 * The amount a delivery claimed, as the trail records it: delivery.submitted's `amount` (a partial
 * capture), else the escrow's amount in escrow.created (what a `price` check is evaluated against).
 */
export function claimedAmount(trail: ReadonlyArray<TrailEntry>): bigint | undefined {
  const d = trail.find((e) => e.event === 'delivery.submitted');
  if (d && isObj(d.body) && d.body.amount !== undefined) return amountMicro(d.body.amount) ?? undefined;
  const c = trail.find((e) => e.event === 'escrow.created');
  const escrow = c && isObj(c.body) && isObj(c.body.escrow) ? c.body.escrow : undefined;
  return escrow ? (amountMicro(escrow.amount) ?? undefined) : undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks that need only what the trail records (the content hash, the receipt time), not the payload. */
const WITHOUT_PAYLOAD = new Set<string>(['hash', 'deadline']);

/** What the trail records of the delivery and its verdict, or why it cannot be read. */
function recorded(trail: ReadonlyArray<TrailEntry>): { contentHash: string; receivedAt: Date; passed: boolean; failed: string[] } | string {
  const delivery = trail.find((e) => e.event === 'delivery.submitted');
  const verdict = trail.find((e) => e.event === 'verdict.passed' || e.event === 'verdict.failed');
  const d = delivery && isObj(delivery.body) ? delivery.body : undefined;
  const v = verdict && isObj(verdict.body) ? verdict.body : undefined;
  if (!delivery || !d || typeof d.contentHash !== 'string') return 'the delivery.submitted entry records no contentHash';
  if (!verdict || !v) return 'the trail has a delivery but no verdict entry';
  const failed = Array.isArray(v.failed) && v.failed.every((k) => typeof k === 'string') ? (v.failed as string[]) : null;
  if (failed === null) return `the ${verdict.event} entry records no list of failed check kinds`;
  return { contentHash: d.contentHash, receivedAt: new Date(delivery.at), passed: verdict.event === 'verdict.passed', failed };
}

const said = (passed: boolean, failed: readonly string[]) => (passed ? 'passed' : `failed (${failed.join(', ') || 'no kind named'})`);

/** The delivery's submittedAt as the payee signed it, when the bundle carries the delivery signature. */
function signedSubmittedAt(b: Bundle): unknown {
  const s = b.parties?.signatures.find((p) => p.kind === 'delivery');
  return s && isObj(s.signedBody) ? s.signedBody.submittedAt : undefined;
}

/** [ok, detail] of the replay; a throw (terms canonical JSON cannot represent) is the caller's failure. */
export function replayVerdict(b: Bundle): [boolean, string] {
  const { proof, trail } = b;
  if (b.terms === undefined) return [false, 'the bundle carries no terms, so the verdict cannot be re-run'];
  const termsHash = sha256Hex(canonicalize(b.terms));
  if (termsHash !== proof.termsHash) return [false, `terms hash to ${termsHash}, not proof.termsHash ${proof.termsHash}`];
  const terms = b.terms as Terms;
  if (!isObj(terms) || !Array.isArray(terms.checks)) return [false, 'terms has no list of checks'];
  if (!trail.some((e) => e.event === 'delivery.submitted'))
    return [true, 'terms hash to proof.termsHash; no delivery was made, so there is no verdict to re-run'];
  const r = recorded(trail);
  if (typeof r === 'string') return [false, r];
  const checks = terms.checks as TermCheck[];

  if (b.disclosed !== undefined) {
    const bytes = utf8(canonicalize(b.disclosed.payload));
    const contentHash = sha256Hex(bytes);
    if (contentHash !== r.contentHash)
      return [false, `the disclosed payload hashes to ${contentHash}, not the delivery's contentHash ${r.contentHash}`];
    const signed = signedSubmittedAt(b);
    if (signed !== undefined && signed !== b.disclosed.submittedAt)
      return [false, `disclosed.submittedAt ${b.disclosed.submittedAt} is not the ${String(signed)} the payee signed`];
    const facts: DeliveryFacts = {
      payload: b.disclosed.payload,
      contentHash,
      sizeBytes: bytes.byteLength,
      receivedAt: r.receivedAt,
      amount: claimedAmount(trail),
    };
    const again = evaluateChecks(checks, facts);
    const failed = again.results.filter((x) => !x.passed).map((x) => x.check.kind);
    const same = again.passed === r.passed && canonicalize(failed) === canonicalize(r.failed);
    return same
      ? [
          true,
          `re-ran all ${checks.length} checks of the terms against the disclosed payload: ${said(r.passed, r.failed)}, as the trail records`,
        ]
      : [
          false,
          `re-running the ${checks.length} checks against the disclosed payload gives ${said(again.passed, failed)}; the trail records ${said(r.passed, r.failed)}`,
        ];
  }

  // Without the payload: hash and deadline checks need only the trail; every other kind is left to a disclosure.
  const replayable = checks.filter((c) => WITHOUT_PAYLOAD.has(c.kind));
  const left = checks.filter((c) => !WITHOUT_PAYLOAD.has(c.kind)).map((c) => c.kind);
  const again = evaluateChecks(replayable, { payload: undefined, contentHash: r.contentHash, sizeBytes: 0, receivedAt: r.receivedAt });
  const failed = again.results.filter((x) => !x.passed).map((x) => x.check.kind);
  const recordedHere = r.failed.filter((k) => WITHOUT_PAYLOAD.has(k));
  const consistent = r.passed === (r.failed.length === 0) && canonicalize(failed) === canonicalize(recordedHere);
  const notRun = left.length
    ? `; not re-run without the payload: ${left.join(', ')} (ask GET /v1/proofs/{id}/bundle?disclose=payload)`
    : '';
  if (!consistent)
    return [
      false,
      `re-running the ${replayable.length} checks that need no payload gives ${failed.length ? `failures (${failed.join(', ')})` : 'passes'}; the trail records ${said(r.passed, r.failed)}${notRun}`,
    ];
  return [
    true,
    `re-ran ${replayable.length} of ${checks.length} checks without the payload (${replayable.map((c) => c.kind).join(', ') || 'none'}): as the trail records (${said(r.passed, r.failed)})${notRun}`,
  ];
}

/** The `verdict.replay` check of verifyBundle. */
export function replayCheck(b: Bundle): Check {
  try {
    const [ok, detail] = replayVerdict(b);
    return { name: 'verdict.replay', ok, detail };
  } catch (err) {
    return { name: 'verdict.replay', ok: false, detail: `could not be re-run: ${(err as Error).message}` };
  }
}
