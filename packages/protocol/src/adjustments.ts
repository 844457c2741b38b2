// Checking the adjustments a bundle carries (the service's protocol documentation, §24.7): refunds after
// release, each an issuer-signed proof in the log whose trail extends the closing proof's, signed by
// the payee or the arbiter before the refund deadline, never more in total than the payee's net payout.
// Web APIs only.
import { amountMicro, formatAmount, splitAmount } from './amounts.ts';
import { parseIsoDateTime } from './terms/evaluate.ts';
import type { Bundle, Check, Inclusion, Proof, TrailEntry } from './types.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The refund window's default (refundWithinSeconds absent on the escrow): 30 days. */
export const DEFAULT_REFUND_WITHIN_SECONDS = 2_592_000;

/** What the adjustment checks need from the bundle verifier: its own proof and inclusion checks. */
export interface AdjustmentDeps {
  proofSignature(p: Proof): boolean;
  inclusion(p: Proof, i: Inclusion): { ok: boolean; detail: string };
  /** Keys a signer must be among: the pinned ones, or the bundle's issuer keys when it trusts them. */
  signers: ReadonlySet<string>;
}

function run(name: string, fn: () => [boolean, string]): Check {
  try {
    const [ok, detail] = fn();
    return { name, ok, detail };
  } catch (err) {
    return { name, ok: false, detail: `could not be checked: ${(err as Error).message}` };
  }
}

/** The payee's net payout of a closing: `payouts.payee`, or for a proof without payouts its whole share. */
export function payeeNet(p: Proof): bigint | null {
  if (p.payouts) return amountMicro(p.payouts.payee);
  const amount = amountMicro(p.amount);
  if (amount === null) return null;
  if (p.outcome === 'released') return amount;
  if (p.outcome === 'split' && p.shares) return splitAmount(amount, p.shares.payeeBps).payee;
  return 0n;
}

function roles(trail: ReadonlyArray<TrailEntry>): { payer?: string; payee?: string; arbiter?: string; window: number } {
  const body = trail[0]?.event === 'escrow.created' && isObj(trail[0].body) ? trail[0].body : {};
  const e = isObj(body.escrow) ? body.escrow : {};
  const key = (k: string) => (isObj(e[k]) && typeof (e[k] as Obj).publicKey === 'string' ? ((e[k] as Obj).publicKey as string) : undefined);
  const t = isObj(e.timeouts) ? e.timeouts : {};
  const window = typeof t.refundWithinSeconds === 'number' ? t.refundWithinSeconds : DEFAULT_REFUND_WITHIN_SECONDS;
  return { payer: key('payer'), payee: key('payee'), arbiter: key('arbiter'), window };
}

/**
 * The refundDeadline an x402 payer bound in the authorization the bundle carries for escrow.created
 * (its hash is checked by `parties.*`); undefined for an escrow not collected by x402 or without one.
 */
function boundRefundDeadline(b: Bundle): number | undefined {
  const created = b.trail[0]?.event === 'escrow.created' && isObj(b.trail[0].body) ? b.trail[0].body : {};
  if (!isObj(created.x402)) return undefined;
  const signatures: unknown = b.parties?.signatures;
  const a = Array.isArray(signatures) ? signatures.find((s) => isObj(s) && s.kind === 'x402' && s.trailIndex === 0)?.signedBody : undefined;
  return (isObj(a) && parseIsoDateTime(a.refundDeadline)) || undefined;
}

/**
 * The refund deadline: the closing's issuedAt + refundWithinSeconds, or the x402 payer's bound
 * refundDeadline when that is earlier, as the closing's proof.issued entry must also say.
 */
function deadlineOf(b: Bundle): { at: number; text: string } | string {
  const { proof, trail } = b;
  const r = roles(trail);
  if (r.window <= 0) return 'the escrow was created with refundWithinSeconds 0: no refunds after release';
  const byWindow = Date.parse(proof.issuedAt) + r.window * 1000;
  if (Number.isNaN(byWindow)) return 'proof.issuedAt is not a time';
  const bound = boundRefundDeadline(b);
  const at = bound !== undefined && bound < byWindow ? bound : byWindow;
  const text = new Date(at).toISOString();
  const how = at === byWindow ? `issuedAt + ${r.window} s = ${text}` : `the x402 authorization's refundDeadline ${text}`;
  const issued = trail[proof.trailLength];
  const recorded = issued?.event === 'proof.issued' && isObj(issued.body) ? issued.body.refundDeadline : undefined;
  if (recorded !== text)
    return `the closing's proof.issued entry (trail entry ${proof.trailLength}) records refundDeadline ${String(recorded)}, not ${how}`;
  return { at, text };
}

/**
 * `adjustments[i].signature`, `.inclusion`, `.binding`, `.trail`, `.signer`, `.deadline`, `.total` for
 * each carried adjustment, then `adjustments.complete` (every refund.issued of the trail has its
 * adjustment, and the trail ends with the last one). Returns the checks and the net payouts.
 */
export function adjustmentChecks(
  b: Bundle,
  deps: AdjustmentDeps,
): { checks: Check[]; net: { payee: bigint; payer: bigint; fee: bigint } | null } {
  const { proof, trail } = b;
  const adjustments = b.adjustments ?? [];
  const checks: Check[] = [];
  const net0 = payeeNet(proof);
  const payer0 = proof.payouts ? amountMicro(proof.payouts.payer) : null;
  const fee0 = proof.payouts ? amountMicro(proof.payouts.fee) : 0n;
  const r = roles(trail);
  let total = 0n;
  let lastLength = proof.trailLength;
  const deadline = adjustments.length ? deadlineOf(b) : null;
  adjustments.forEach(({ proof: a, inclusion }, i) => {
    const n = `adjustments[${i}]`;
    const amount = amountMicro(a.amount);
    checks.push(
      run(`${n}.signature`, () => {
        if (!deps.proofSignature(a)) return [false, `issuer signature of ${a.id} does not verify over its canonical body`];
        if (!deps.signers.has(a.signature.signer)) return [false, `adjustment signer ${a.signature.signer} is not a trusted issuer key`];
        return [true, `issuer signature of ${a.id} verifies with a trusted issuer key`];
      }),
    );
    checks.push(
      run(`${n}.inclusion`, () => {
        const inc = deps.inclusion(a, inclusion);
        return inc.ok ? [true, `${a.id} is leaf ${inclusion.leafIndex} of a signed ${inclusion.logSize}-leaf log`] : [false, inc.detail];
      }),
    );
    checks.push(
      run(`${n}.binding`, () => {
        if (a.outcome !== 'refunded-after-release') return [false, `outcome is ${a.outcome}, not refunded-after-release`];
        if (a.adjusts !== proof.id) return [false, `adjusts ${String(a.adjusts)} is not the closing proof ${proof.id}`];
        for (const k of ['escrowId', 'payer', 'payee', 'asset', 'termsHash'] as const)
          if (a[k] !== proof[k]) return [false, `${k} ${a[k]} is not the closing proof's ${proof[k]}`];
        if (amount === null || amount <= 0n) return [false, `amount ${a.amount} is not an amount greater than 0`];
        return [true, `adjusts ${proof.id} of the same escrow, parties, asset and terms`];
      }),
    );
    const entry = trail[a.trailLength - 1] as TrailEntry | undefined;
    const data = entry && isObj(entry.body) ? entry.body : {};
    checks.push(
      run(`${n}.trail`, () => {
        if (a.trailLength <= lastLength) return [false, `trailLength ${a.trailLength} does not extend the trail past ${lastLength}`];
        if (!entry || a.trailLength > trail.length)
          return [false, `the bundle's trail has ${trail.length} entries, fewer than trailLength ${a.trailLength}`];
        if (entry.hash !== a.trailHead) return [false, `trail entry ${a.trailLength - 1} does not hash to trailHead`];
        if (entry.event !== 'refund.issued') return [false, `trail entry ${a.trailLength - 1} is ${entry.event}, not refund.issued`];
        if (data.proofId !== a.id || data.amount !== a.amount || (data.reason ?? '') !== (a.reason ?? ''))
          return [false, `refund.issued at ${a.trailLength - 1} records another proof, amount or reason`];
        return [
          true,
          `its trail extends the closing proof's (${proof.trailLength} → ${a.trailLength} entries) and ends with its refund.issued`,
        ];
      }),
    );
    lastLength = Math.max(lastLength, a.trailLength);
    checks.push(
      run(`${n}.signer`, () => {
        const by = data.by;
        if (typeof by !== 'string') return [false, 'refund.issued names no signer'];
        if (by !== r.payee && by !== r.arbiter) return [false, `signer ${by} is neither the payee nor the named arbiter`];
        return [true, `signed by the ${by === r.payee ? 'payee' : 'arbiter'} (its consent is checked as parties[…].refund)`];
      }),
    );
    checks.push(
      run(`${n}.deadline`, () => {
        if (deadline === null || typeof deadline === 'string') return [false, deadline ?? 'no refund deadline'];
        const at = entry ? Date.parse(entry.at) : Number.NaN;
        if (!(at < deadline.at))
          return [false, `refund.issued was received at ${entry?.at}, not before the refund deadline ${deadline.text}`];
        return [true, `received at ${entry!.at}, before the refund deadline ${deadline.text}`];
      }),
    );
    checks.push(
      run(`${n}.total`, () => {
        if (amount === null || net0 === null) return [false, 'amounts cannot be read'];
        total += amount;
        if (a.refundedTotal !== formatAmount(total))
          return [false, `refundedTotal ${String(a.refundedTotal)} is not the running total ${formatAmount(total)}`];
        if (total > net0) return [false, `refunds total ${formatAmount(total)}, over the payee's net payout ${formatAmount(net0)}`];
        return [true, `refunds total ${formatAmount(total)} of the payee's net payout ${formatAmount(net0)}`];
      }),
    );
  });
  checks.push(
    run('adjustments.complete', () => {
      const issued = trail.filter((e) => e.event === 'refund.issued').length;
      if (issued !== adjustments.length)
        return [false, `the trail has ${issued} refund.issued entries but the bundle carries ${adjustments.length} adjustments`];
      if (adjustments.length && trail.length !== lastLength)
        return [false, `the trail has ${trail.length} entries; it should end with the last adjustment's ${lastLength}`];
      return [true, `every refund after release in the trail is carried (${adjustments.length})`];
    }),
  );
  const net = net0 !== null && payer0 !== null && fee0 !== null ? { payee: net0 - total, payer: payer0 + total, fee: fee0 } : null;
  return { checks, net };
}
