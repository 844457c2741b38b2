// Renders a verifyBundle result: every check with pass or fail and its detail, in words a person reads.
import type { Bundle, PartySignatureKind, VerifyResult } from '@escrow-settlement/protocol/types';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { badge, h, plural } from './dom.ts';
import { pinnedKeys } from './pins.ts';
import { PIN_BUTTON } from './views/pinControls.ts';

const LABELS: Record<string, string> = {
  'bundle.format': 'Bundle format',
  'proof.signature': 'Issuer signature over the proof',
  'proof.issuer': 'Signer is a published issuer key',
  'proof.issuer.trusted': 'Signer is your pinned issuer key',
  'issuer.trust': 'Issuer key pinned in this browser',
  'trail.chain': 'Trail hash chain',
  'trail.length': 'Trail length matches the proof',
  'trail.head': 'Trail head matches the proof',
  'leaf.hash': 'Log leaf hash of the proof',
  'inclusion.path': 'Inclusion in the transparency log',
  'head.signature': 'Checkpoint (signed tree head) signature',
  'head.trusted': 'Checkpoint signer is your pinned key',
  'head.match': 'Checkpoint covers the inclusion root',
  'checkpoint.signature': 'Served checkpoint is signed by your pinned key',
  'checkpoint.inclusion': 'Proof is in the served (witnessed) checkpoint',
  'checkpoint.cosignatures': 'Witness cosignatures meet the quorum',
  'checkpoint.witnessed': 'Bundle carries a witnessed checkpoint',
  'checkpoint.format': 'Witnessed checkpoint format',
  'parties.complete': 'Every party signature the service relied on is included',
  'verdict.replay': 'Verdict re-run from the terms',
  'payouts.sum': 'Payouts sum to the amount, as the outcome and the fee give',
  'adjustments.complete': 'Every refund after release in the trail is carried',
};

/** What each check of an adjustment (a refund after release, docs/protocol.md §24.7) verifies. */
const ADJUSTMENT: Record<string, string> = {
  signature: 'issuer signature',
  inclusion: 'inclusion in the transparency log',
  binding: 'adjusts the closing proof (same escrow, parties, asset, terms)',
  trail: 'its refund.issued entry extends the trail',
  signer: 'signed by the payee or the arbiter',
  deadline: 'received before the refund deadline',
  total: "refunded total within the payee's net payout",
};

/** What a party signed, by the `kind` of its signature in the bundle. */
const SIGNED: Record<PartySignatureKind, string> = {
  mandate: 'mandate',
  x402: 'x402 payment',
  delivery: 'delivery',
  'x402.void': 'x402 void',
  'dispute.open': 'dispute opening',
  'dispute.evidence': 'dispute evidence',
  ruling: 'ruling',
  ap2: 'AP2 payment mandate chain',
  refund: 'refund after release',
  'refund.request': 'refund request',
};

/** A check's name in words: `parties[0].delivery` reads "Party signature 1: the delivery". */
export function checkLabel(name: string): string {
  if (LABELS[name]) return LABELS[name];
  const party = /^parties\[(\d+)\]\.(.+)$/.exec(name);
  if (party) return `Party signature ${Number(party[1]) + 1}: the ${SIGNED[party[2] as PartySignatureKind] ?? party[2]}`;
  const adjustment = /^adjustments\[(\d+)\]\.(.+)$/.exec(name);
  if (adjustment) return `Adjustment ${Number(adjustment[1]) + 1}: ${ADJUSTMENT[adjustment[2]] ?? adjustment[2]}`;
  return name;
}

/** How to pin, in the page's own words: what the library's detail says in terms of its options. */
const HOW_TO_PIN = `Click "${PIN_BUTTON}" above, then verify again.`;

/**
 * Verifies a bundle in this page against the pinned keys: pure computation, no network. With no
 * pin nothing says who issued it, so the result is not valid (check issuer.trust), never "valid
 * against the bundle's own keys". Any parsed JSON may come in: verifyBundle checks the shape first
 * and reports a wrong one as check bundle.format, so the pasted text needs no narrowing here.
 */
export function verifyHere(bundle: unknown): { result: VerifyResult; pinned: number } {
  const pins = pinnedKeys();
  const result = verifyBundle(bundle as Bundle, pins.length ? { trustedKeys: pins } : {});
  return { result, pinned: pins.length };
}

export function renderChecks(result: VerifyResult, pinned: number): HTMLElement {
  const failed = result.checks.filter((c) => !c.ok);
  const total = result.checks.length;
  const onlyUnpinned = pinned === 0 && failed.length === 1 && failed[0].name === 'issuer.trust';
  const verdict = result.ok
    ? `Valid: all ${plural(total, 'check')} pass.`
    : onlyUnpinned
      ? `Not valid yet: no issuer key is pinned. The other ${plural(total - 1, 'check')} pass.`
      : `Not valid: ${failed.length} of ${plural(total, 'check')} ${failed.length === 1 ? 'fails' : 'fail'} (${failed.map((c) => checkLabel(c.name)).join('; ')}).`;
  return h(
    'div',
    { class: 'checks', role: 'status', 'aria-live': 'polite' },
    h('p', { class: result.ok ? 'verdict ok' : 'verdict bad', 'data-testid': 'verdict' }, verdict),
    pinned === 0
      ? h(
          'p',
          { class: 'warn', 'data-testid': 'how-to-pin' },
          `No issuer key is pinned, so nothing here says who issued this proof: anyone can make a bundle that is consistent with a key of their own. ${HOW_TO_PIN}`,
        )
      : null,
    h(
      'ul',
      { class: 'checklist' },
      result.checks.map((c) =>
        h(
          'li',
          { class: c.ok ? 'ok' : 'bad', 'data-check': c.name },
          badge(c.ok),
          ' ',
          h('strong', null, checkLabel(c.name)),
          h(
            'span',
            { class: 'detail' },
            c.name === 'issuer.trust' && !c.ok && pinned === 0 ? `No issuer key is pinned in this browser. ${HOW_TO_PIN}` : c.detail,
          ),
        ),
      ),
    ),
  );
}
