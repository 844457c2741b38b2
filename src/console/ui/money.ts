// Where the money of a matter went (docs/protocol.md §24): the fee, a closing's payouts, the refunds
// after release and the net payouts after them. Amounts are added in micro-units with the protocol
// package's own arithmetic, never in floating point.
import { amountMicro, formatAmount } from '@escrow-settlement/protocol/amounts';
import type { Bundle, Proof, VerifyResult } from '@escrow-settlement/protocol/types';
import { type Fact, facts, h, idText, short, table } from './dom.ts';

export type Payouts = { payee: string; payer: string; fee: string };

/** "2.5% (250 bps)": a fee's rate. */
export const bpsText = (bps: number) => `${bps / 100}% (${bps} bps)`;

/** The fee fact: rate, what this closing paid of it when known, and to whom. */
export function feeText(fee: { bps: number; recipient: string; amount?: string }, asset: string) {
  return [bpsText(fee.bps), fee.amount !== undefined ? `: ${fee.amount} ${asset}` : '', ' to ', short(fee.recipient)];
}

/** Payouts as one line: "payee 9.75, payer 0, fee 0.25 USDC". */
export const payoutsText = (p: Payouts, asset: string) => `payee ${p.payee}, payer ${p.payer}, fee ${p.fee} ${asset}`;

/**
 * The payouts after refunds of `refunded` in total: the payee gives them back to the payer; the fee
 * stays (docs/protocol.md §24.4). Null when an amount cannot be read.
 */
export function netPayouts(p: Payouts, refunded: string): Payouts | null {
  const [payee, payer, r] = [amountMicro(p.payee), amountMicro(p.payer), amountMicro(refunded)];
  if (payee === null || payer === null || r === null) return null;
  return { payee: formatAmount(payee - r), payer: formatAmount(payer + r), fee: p.fee };
}

/** A proof's money facts: the claim it captured, the fee, the payouts; for an adjustment, what it adjusts. */
export function proofMoneyFacts(p: Proof): Fact[] {
  const rows: Array<Fact | null> = [
    p.captured !== undefined ? ['Captured', `${p.captured} ${p.asset} of ${p.amount} (the delivery's claim)`] : null,
    p.fee ? ['Fee', feeText(p.fee, p.asset), { 'data-testid': 'proof-fee' }] : null,
    p.payouts ? ['Payouts', payoutsText(p.payouts, p.asset), { 'data-testid': 'proof-payouts' }] : null,
    p.adjusts ? ['Adjusts', idText(p.adjusts), { 'data-testid': 'proof-adjusts' }] : null,
    p.refundedTotal !== undefined ? ['Refunded total', `${p.refundedTotal} ${p.asset}`] : null,
    p.adjusts ? ['Reason', p.reason || '—'] : null,
  ];
  return rows.filter((r): r is Fact => r !== null);
}

/**
 * A bundle's money as verifyBundle saw it: the closing proof's fee and payouts, each adjustment it
 * carries, and the net payouts the result reports. Nothing for a bundle without money fields; a
 * bundle whose shape failed shows nothing either (the checks say why).
 */
export function bundleMoney(bundle: unknown, result: VerifyResult): HTMLElement | null {
  if (result.checks.some((c) => c.name === 'bundle.format' && !c.ok)) return null;
  const b = bundle as Bundle;
  const proof = b.proof;
  const adjustments = b.adjustments ?? [];
  const own = proofMoneyFacts(proof);
  if (own.length === 0 && adjustments.length === 0 && !result.payouts) return null;
  return h(
    'div',
    { class: 'money', 'data-testid': 'bundle-money' },
    h('h3', null, 'Money'),
    own.length ? facts(own) : null,
    adjustments.length
      ? table(
          ['adjustment proof', 'amount', 'adjusts', 'refunded total', 'reason'],
          adjustments.map(({ proof: a }) => [
            idText(a.id),
            `${a.amount} ${a.asset}`,
            a.adjusts ? idText(a.adjusts) : '—',
            a.refundedTotal ?? '—',
            a.reason || '—',
          ]),
          'Refunds after release carried by the bundle',
        )
      : null,
    result.payouts
      ? h(
          'p',
          { 'data-testid': 'verified-payouts' },
          adjustments.length
            ? `Net payouts after ${adjustments.length === 1 ? 'the refund' : `${adjustments.length} refunds`}: `
            : 'Payouts: ',
          payoutsText(result.payouts, proof.asset),
          result.ok ? ' (verified here).' : ' (as the bundle says; not verified: a check fails).',
        )
      : null,
  );
}
