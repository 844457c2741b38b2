// Offline verification of proofs, trails, log inclusion and consistency, and bundles; Web APIs only (Node, Deno, browsers).
import { canonicalBytes } from './crypto/jcs.ts';
import { sha256Hex } from './crypto/hash.ts';
import { concatBytes, fromHex, isHex64 } from './crypto/bytes.ts';
import { verifyJson } from './crypto/ed25519.ts';
import { entryHash, GENESIS } from './trail/chain.ts';
import { verifyConsistency as tlogConsistency, verifyInclusion as tlogInclusion } from './tlog/verify.ts';
import { partyChecks } from './parties.ts';
import { replayCheck } from './replay.ts';
import { adjustmentChecks } from './adjustments.ts';
import { witnessChecks, type WitnessOptions } from './witnessed.ts';
import { bundleProblem, consistencyProblem, headProblem, inclusionProblem, proofProblem, trailProblem } from './shape.ts';
import { amountMicro, formatAmount, splitAmount } from './amounts.ts';
import type { Bundle, Check, ConsistencyProof, Inclusion, IssuerKey, Proof, SignedHead, TrailEntry, VerifyResult } from './types.ts';

/** prevHash of a trail's first entry (64 zeros at genesis). */
/** The trail's genesis prevHash, and its hash rule: the same code the service chains with. */
export const GENESIS_HASH = GENESIS;

export interface VerifyOptions extends WitnessOptions {
  /** Keys an auditor pins (hex public keys or IssuerKey records): signers must be among them. */
  trustedKeys?: ReadonlyArray<IssuerKey | string>;
  /**
   * verifyBundle only: accept the issuer keys the bundle itself carries. Anyone can make a bundle
   * with a key of their own that passes this way, so it shows self-consistency, not who issued it;
   * the result carries a warning. Without it, verifyBundle needs trustedKeys.
   */
  trustBundleKeys?: boolean;
  /** verifyBundle only: the AP2 issuer keys (a JWKS) an AP2 matter's Payment Mandate chain must verify with (the AP2 guide (ap2.md in the repository docs) §6). */
  ap2Issuers?: unknown;
}

/** The warning a result carries when the caller trusted the bundle's own keys. */
export const BUNDLE_KEYS_WARNING =
  'trusting the issuer keys inside the bundle: anyone can make a bundle that passes with a key of their own; pin the issuer key (trustedKeys, --trusted-key or --issuer-doc) to know the service issued it';

/** Whom verifyBundle trusts: the pinned keys, or (explicitly) the bundle's own; neither is a failing check. */
function issuerTrust(trusted: Set<string> | null, opts: VerifyOptions): Check | null {
  if (opts.trustBundleKeys !== undefined && typeof opts.trustBundleKeys !== 'boolean')
    throw new TypeError('trustBundleKeys must be a boolean');
  if (trusted && opts.trustBundleKeys) throw new TypeError('give trustedKeys or trustBundleKeys, not both');
  if (trusted) return null; // proof.issuer.trusted and head.trusted check the pinned keys
  return opts.trustBundleKeys
    ? { name: 'issuer.trust', ok: true, detail: `WARNING ${BUNDLE_KEYS_WARNING}` }
    : {
        name: 'issuer.trust',
        ok: false,
        detail:
          'no trusted issuer key given: pin the issuer keys (trustedKeys, from /.well-known/proof-issuer.json fetched out of band) or pass trustBundleKeys: true to accept the keys the bundle carries',
      };
}

/** Transparency-log leaf hash of a proof: SHA-256(0x00 || JCS(proof)) (RFC 6962 §2.1). */
export function proofLeafHash(proof: Proof): string {
  return sha256Hex(concatBytes(new Uint8Array([0]), canonicalBytes(proof)));
}

/** The issuer-signed body of a proof: every field except `signature`. */
export function proofBody(proof: Proof): Omit<Proof, 'signature'> {
  const { signature: _omit, ...body } = proof;
  return body;
}

/** hash of a trail entry: sha256 of JCS({index, prevHash, at, event, body}). */
export function trailEntryHash(e: Omit<TrailEntry, 'hash'>): string {
  return entryHash(e);
}

/** The first broken link of a trail and why, or null when the chain verifies from genesis. */
export function trailBreak(entries: ReadonlyArray<TrailEntry>): { index: number; reason: string } | null {
  const problem = trailProblem(entries, 'entries');
  if (problem) throw new TypeError(problem);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.index !== i) return { index: i, reason: `index is ${e.index}, expected ${i}` };
    const prev = i === 0 ? GENESIS_HASH : entries[i - 1].hash;
    if (e.prevHash !== prev) {
      return { index: i, reason: i === 0 ? 'prevHash is not 64 zeros (genesis)' : `prevHash does not equal the hash of entry ${i - 1}` };
    }
    let computed: string;
    try {
      computed = trailEntryHash(e);
    } catch (err) {
      return { index: i, reason: `cannot be canonicalized (${(err as Error).message})` };
    }
    if (e.hash !== computed) return { index: i, reason: 'hash does not equal sha256(JCS({index, prevHash, at, event, body}))' };
  }
  return null;
}

/** Index of the first broken trail entry, or null when the hash chain is intact end to end. */
export function verifyTrail(entries: ReadonlyArray<TrailEntry>): number | null {
  return trailBreak(entries)?.index ?? null;
}

function trustedSet(opts: VerifyOptions): Set<string> | null {
  if (opts.trustedKeys === undefined) return null;
  if (!Array.isArray(opts.trustedKeys)) throw new TypeError('trustedKeys must be an array');
  return new Set(
    opts.trustedKeys.map((k, i) => {
      const pub = typeof k === 'string' ? k : k?.publicKey;
      if (!isHex64(pub)) throw new TypeError(`trustedKeys[${i}] must be a 64-hex public key or an IssuerKey`);
      return pub;
    }),
  );
}

const result = (checks: Check[]): VerifyResult => ({ ok: checks.every((c) => c.ok), checks });

/** Runs one check; a throw inside it (e.g. a value canonical JSON cannot represent) is a failure, not a crash. */
function run(name: string, fn: () => [boolean, string]): Check {
  try {
    const [ok, detail] = fn();
    return { name, ok, detail };
  } catch (err) {
    return { name, ok: false, detail: `could not be checked: ${(err as Error).message}` };
  }
}

function trustCheck(name: string, what: string, signer: string, trusted: Set<string>): Check {
  return run(name, () =>
    trusted.has(signer)
      ? [true, `${what} signer is one of the ${trusted.size} trusted keys`]
      : [false, `${what} signer ${signer} is not one of the ${trusted.size} trusted keys given`],
  );
}

/** Issuer signature over JCS(proof without signature); with trustedKeys, the signer must be pinned. */
export function verifyProof(proof: Proof, opts: VerifyOptions = {}): VerifyResult {
  const problem = proofProblem(proof);
  if (problem) throw new TypeError(problem);
  const trusted = trustedSet(opts);
  const { signer, signature } = proof.signature;
  const checks = [
    run('proof.signature', () =>
      verifyJson(proofBody(proof), signature, signer)
        ? [true, `issuer signature verifies over the canonical proof body (signer ${signer})`]
        : [false, `issuer signature does not verify over the canonical proof body with signer ${signer}`],
    ),
  ];
  if (trusted) checks.push(trustCheck('proof.issuer.trusted', 'proof', signer, trusted));
  return result(checks);
}

/** The proof is leaf `leafIndex` of the log whose root is `rootHash` (RFC 9162 §2.1.3.2). The head is checked by verifyHead. */
export function verifyInclusion(proof: Proof, inclusion: Inclusion): VerifyResult {
  const problem = proofProblem(proof) ?? inclusionProblem(inclusion);
  if (problem) throw new TypeError(problem);
  const { leafIndex, logSize, rootHash, auditPath } = inclusion;
  return result([
    run('leaf.hash', () => {
      const computed = proofLeafHash(proof);
      return computed === inclusion.leafHash
        ? [true, `inclusion.leafHash equals SHA-256(0x00 || JCS(proof))`]
        : [false, `inclusion.leafHash ${inclusion.leafHash} does not equal SHA-256(0x00 || JCS(proof)) = ${computed}`];
    }),
    // The path is checked from the hash of the proof itself, so it binds this proof, not just a hash.
    run('inclusion.path', () =>
      tlogInclusion(
        fromHex(proofLeafHash(proof)),
        leafIndex,
        logSize,
        auditPath.map((h) => fromHex(h)),
        fromHex(rootHash),
      )
        ? [true, `audit path of ${auditPath.length} hashes leads from leaf ${leafIndex} to the root of the ${logSize}-leaf log`]
        : [false, `audit path does not lead from this proof at leaf ${leafIndex} to rootHash ${rootHash} of a ${logSize}-leaf log`],
    ),
  ]);
}

/**
 * A tree head is signed by one of `issuerKeys` over JCS({logSize, rootHash, signedAt}), its
 * keyId names that key, and with trustedKeys the signer is pinned.
 */
export function verifyHead(head: SignedHead, issuerKeys: ReadonlyArray<IssuerKey>, opts: VerifyOptions = {}): VerifyResult {
  const problem = headProblem(head, 'head');
  if (problem) throw new TypeError(problem);
  const trusted = trustedSet(opts);
  const { signer, signature } = head.signature;
  const checks = [
    run('head.signature', () => {
      const era = issuerKeys.find((k) => k.publicKey === signer);
      if (!era) return [false, `head signer ${signer} is not among the ${issuerKeys.length} issuer keys`];
      if (era.keyId !== head.keyId) return [false, `head.keyId ${head.keyId} does not name the signer's key ${era.keyId}`];
      return verifyJson({ logSize: head.logSize, rootHash: head.rootHash, signedAt: head.signedAt }, signature, signer)
        ? [true, `tree head signature verifies with issuer key ${era.keyId}`]
        : [false, `tree head signature does not verify over JCS({logSize, rootHash, signedAt}) with signer ${signer}`];
    }),
  ];
  if (trusted) checks.push(trustCheck('head.trusted', 'head', signer, trusted));
  return result(checks);
}

/** The log of `secondSize` leaves extends the log of `firstSize` leaves (RFC 9162 §2.1.4.2). */
export function verifyConsistency(c: ConsistencyProof): VerifyResult {
  const problem = consistencyProblem(c);
  if (problem) throw new TypeError(problem);
  return result([
    run('consistency.path', () =>
      tlogConsistency(
        c.firstSize,
        c.secondSize,
        fromHex(c.firstRoot),
        fromHex(c.secondRoot),
        c.path.map((h) => fromHex(h)),
      )
        ? [true, `the ${c.secondSize}-leaf log extends the ${c.firstSize}-leaf log (${c.path.length} proof hashes)`]
        : [
            false,
            `consistency path does not show the ${c.secondSize}-leaf log with root ${c.secondRoot} extends the ${c.firstSize}-leaf log with root ${c.firstRoot}`,
          ],
    ),
  ]);
}

/**
 * `payouts.sum` of a closing proof that carries `payouts` (the service's protocol documentation, §24.1):
 * payee + payer + fee is exactly `amount`; the payee's share (payee + fee) is what the outcome gives of
 * the claim (`captured`, else `amount`): all of it released, floor(claim × payeeBps / 10000) of a
 * split, none of a refund; and the fee is floor(share × bps / 10000), as `fee.amount` says.
 */
export function payoutsProblem(proof: Proof): string | null {
  const p = proof.payouts;
  if (p === undefined) return null;
  const [payee, payer, fee, amount] = [p.payee, p.payer, p.fee, proof.amount].map(amountMicro);
  if (payee === null || payer === null || fee === null || amount === null) return 'payouts and amount must be amounts';
  if (payee + payer + fee !== amount) return `payouts sum to ${formatAmount(payee + payer + fee)}, not the amount ${proof.amount}`;
  const claim = proof.captured === undefined ? amount : amountMicro(proof.captured);
  if (claim === null || claim > amount) return 'captured is not an amount within the escrow amount';
  const share =
    proof.outcome === 'released' ? claim : proof.outcome === 'split' && proof.shares ? splitAmount(claim, proof.shares.payeeBps).payee : 0n;
  if (payee + fee !== share)
    return `the payee's share is ${formatAmount(payee + fee)}, not the ${formatAmount(share)} a ${proof.outcome} of ${formatAmount(claim)} gives`;
  const bps = proof.fee?.bps ?? 0;
  const due = (share * BigInt(bps)) / 10_000n;
  if (fee !== due) return `the fee is ${formatAmount(fee)}, not floor(${formatAmount(share)} × ${bps} / 10000) = ${formatAmount(due)}`;
  if (proof.fee && amountMicro(proof.fee.amount) !== fee) return `fee.amount ${proof.fee.amount} is not payouts.fee ${p.fee}`;
  return null;
}

/**
 * Everything in an offline bundle: proof signature and issuer, trail chain and its
 * binding to the proof, the proof's leaf and inclusion, the signed head the inclusion ends at,
 * every party signature the closing relied on (`parties[i].<kind>`, then `parties.complete`), and
 * the verdict re-run from the terms and, when disclosed, the payload (`verdict.replay`).
 * Valid only against keys the caller trusts: `trustedKeys` (pinned out of band, e.g. the issuer
 * document's keys), or explicitly `trustBundleKeys: true`, which adds a warning.
 */
export function verifyBundle(bundle: Bundle, opts: VerifyOptions = {}): VerifyResult {
  const problem = bundleProblem(bundle);
  if (problem) return result([{ name: 'bundle.format', ok: false, detail: problem }]);
  const trusted = trustedSet(opts);
  const { proof, trail, inclusion, issuerKeys } = bundle;
  const signer = proof.signature.signer;
  const checks: Check[] = [verifyProof(proof).checks[0]];
  checks.push(
    run('proof.issuer', () => {
      const era = issuerKeys.find((k) => k.publicKey === signer);
      return era
        ? [true, `signer is issuer key ${era.keyId} (valid from ${era.validFrom}${era.validUntil ? ` until ${era.validUntil}` : ''})`]
        : [false, `signer ${signer} is not among the bundle's ${issuerKeys.length} issuer keys`];
    }),
  );
  if (trusted) checks.push(trustCheck('proof.issuer.trusted', 'proof', signer, trusted));
  const trust = issuerTrust(trusted, opts);
  if (trust) checks.push(trust);
  checks.push(
    run('trail.chain', () => {
      const broken = trailBreak(trail);
      return broken
        ? [false, `trail entry ${broken.index}: ${broken.reason}`]
        : [true, `${trail.length} entries chain from genesis and every hash recomputes`];
    }),
  );
  // With adjustments (refunds after release), the trail runs on past the closing proof to the last
  // adjustment's refund.issued; adjustments.* checks that part.
  const adjusted = bundle.adjustments !== undefined && bundle.adjustments.length > 0;
  checks.push(
    run('trail.length', () =>
      trail.length === proof.trailLength
        ? [true, `trail has ${trail.length} entries, as proof.trailLength says`]
        : adjusted && trail.length > proof.trailLength
          ? [true, `trail has ${trail.length} entries: the ${proof.trailLength} of proof.trailLength, then the adjustments'`]
          : [false, `trail has ${trail.length} entries but proof.trailLength is ${proof.trailLength}`],
    ),
  );
  checks.push(
    run('trail.head', () => {
      // Without adjustments the trail ends at the proof; with them, the proof's head is at its trailLength.
      const at = adjusted ? proof.trailLength : trail.length;
      const last = at > 0 ? trail[at - 1]?.hash : GENESIS_HASH;
      const where = adjusted ? 'the trail hash at proof.trailLength' : 'the last trail hash';
      return last === proof.trailHead
        ? [true, `${where} equals proof.trailHead`]
        : [false, `${where} ${String(last)} does not equal proof.trailHead ${proof.trailHead}`];
    }),
  );
  checks.push(...verifyInclusion(proof, inclusion).checks);
  checks.push(...verifyHead(inclusion.head, issuerKeys, opts).checks);
  checks.push(
    run('head.match', () => {
      const { head } = inclusion;
      if (head.logSize !== inclusion.logSize)
        return [false, `head.logSize ${head.logSize} does not equal inclusion.logSize ${inclusion.logSize}`];
      if (head.rootHash !== inclusion.rootHash)
        return [false, `head.rootHash ${head.rootHash} does not equal inclusion.rootHash ${inclusion.rootHash}`];
      return [true, `the signed head covers the same ${head.logSize}-leaf log and root as the inclusion`];
    }),
  );
  if (proof.payouts !== undefined) {
    checks.push(
      run('payouts.sum', () => {
        const problem = payoutsProblem(proof);
        return problem
          ? [false, problem]
          : [
              true,
              `payee ${proof.payouts!.payee} + payer ${proof.payouts!.payer} + fee ${proof.payouts!.fee} = ${proof.amount}, as the outcome and the fee give`,
            ];
      }),
    );
  }
  // Refunds after release: each adjustment's signature, inclusion and place in the trail, the deadline and the total.
  let net: VerifyResult['payouts'];
  if (bundle.adjustments !== undefined) {
    const signers = new Set(trusted ? [...trusted] : issuerKeys.map((k) => k.publicKey));
    const adj = adjustmentChecks(bundle, {
      proofSignature: (p) => verifyJson(proofBody(p), p.signature.signature, p.signature.signer),
      inclusion: (p, inc) => {
        const all = [
          ...verifyInclusion(p, inc).checks,
          ...verifyHead(inc.head, issuerKeys, opts).checks,
          {
            name: 'head.match',
            ok: inc.head.logSize === inc.logSize && inc.head.rootHash === inc.rootHash,
            detail: 'the signed head does not cover the inclusion',
          },
        ];
        const bad = all.find((c) => !c.ok);
        return bad ? { ok: false, detail: `${bad.name}: ${bad.detail}` } : { ok: true, detail: '' };
      },
      signers,
    });
    checks.push(...adj.checks);
    if (adj.net) net = { payee: formatAmount(adj.net.payee), payer: formatAmount(adj.net.payer), fee: formatAmount(adj.net.fee) };
  } else if (proof.payouts) {
    net = { ...proof.payouts };
  }
  // The parties' own signatures: not covered by the issuer's, each re-checked on its own.
  checks.push(...partyChecks(bundle, { ap2Issuers: opts.ap2Issuers }));
  // The verdict, re-run from the terms (and the disclosed payload) with the service's own checks.
  checks.push(replayCheck(bundle));
  // The witnessed checkpoint: required with pinned witnesses, checked whenever present.
  // As for the head: the bundle's keys sign it, the pinned ones (issuer.trust, proof.issuer.trusted) say whose they are.
  const logKeys = trusted ? [...trusted] : issuerKeys.map((k) => k.publicKey);
  checks.push(...witnessChecks(bundle, () => proofLeafHash(proof), logKeys, opts));
  const out = { ...result(checks), ...(net ? { payouts: net } : {}) };
  return opts.trustBundleKeys ? { ...out, warnings: [BUNDLE_KEYS_WARNING] } : out;
}
