// Renders a verifyBundle result: every check with pass or fail and its detail, in words a person reads.
import type { Bundle, VerifyResult } from '@escrow-settlement/protocol/types';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { badge, h } from './dom.ts';
import { pinnedKeys } from './pins.ts';

const LABELS: Record<string, string> = {
  'bundle.format': 'Bundle format',
  'proof.signature': 'Issuer signature over the proof',
  'proof.issuer': 'Signer is a published issuer key',
  'proof.issuer.trusted': 'Signer is your pinned issuer key',
  'issuer.trust': 'An issuer key is pinned',
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
};

export const checkLabel = (name: string) => LABELS[name] ?? (name.startsWith('party') || name.includes('signature') ? `Signature: ${name}` : name);

/**
 * Verifies a bundle in this page against the pinned keys: pure computation, no network. With no
 * pin nothing says who issued it, so the result is not valid (check issuer.trust), never "valid
 * against the bundle's own keys".
 */
export function verifyHere(bundle: Bundle): { result: VerifyResult; pinned: number } {
  const pins = pinnedKeys();
  const result = verifyBundle(bundle, pins.length ? { trustedKeys: pins } : {});
  return { result, pinned: pins.length };
}

export function renderChecks(result: VerifyResult, pinned: number): HTMLElement {
  const failed = result.checks.filter((c) => !c.ok);
  return h('div', { class: 'checks', role: 'status', 'aria-live': 'polite' },
    h('p', { class: result.ok ? 'verdict ok' : 'verdict bad', 'data-testid': 'verdict' },
      result.ok ? `Valid: all ${result.checks.length} checks pass.` : `Not valid: ${failed.length} of ${result.checks.length} checks fail (${failed.map((c) => checkLabel(c.name)).join('; ')}).`),
    pinned === 0 ? h('p', { class: 'warn' }, 'No issuer key is pinned, so nothing here says who issued this proof: anyone can make a bundle that is consistent with a key of their own. Pin the issuer key, then verify again.') : null,
    h('ul', { class: 'checklist' }, result.checks.map((c) =>
      h('li', { class: c.ok ? 'ok' : 'bad', 'data-check': c.name },
        badge(c.ok), ' ', h('strong', null, checkLabel(c.name)), h('span', { class: 'detail' }, c.detail)))));
}
