// The proof of a closed escrow and its offline verification in this page: fetch the bundle once,
// then verifyBundle runs here against the pinned issuer key.
import type { Proof, WitnessState } from '@escrow-settlement/protocol/types';
import { api } from '../api.ts';
import { errorBox, facts, h, idText, pre, sharesText, short, when } from '../dom.ts';
import { renderChecks, verifyHere } from '../checks.ts';
import { pinControls } from './pinControls.ts';
import { cosignatureList } from '../cosignatures.ts';
import { bundleMoney, proofMoneyFacts } from '../money.ts';

export const BUNDLE_HANDOFF = 'escrow-console.bundle';

export function proofSection(proof: Proof): HTMLElement {
  const out = h('div', { class: 'verify-out' });
  const verifyBtn = h('button', { type: 'button', 'data-testid': 'verify-proof' }, 'Verify this proof in the browser');
  verifyBtn.addEventListener('click', async () => {
    out.replaceChildren(h('p', { role: 'status' }, 'Fetching the bundle…'));
    try {
      const [bundle, published] = await Promise.all([
        // With the payload, so verdict.replay re-runs every check of the terms, not only hash and deadline.
        api.proofs.bundle(proof.id, { disclose: 'payload' }),
        api.log.witnesses().then(
          (r) => r.witnesses,
          (): WitnessState[] => [],
        ),
      ]);
      const { result, pinned } = verifyHere(bundle);
      const blob = URL.createObjectURL(new Blob([JSON.stringify(bundle, null, 2)], { type: 'application/json' }));
      out.replaceChildren(
        renderChecks(result, pinned),
        bundleMoney(bundle, result) ?? '',
        cosignatureList(bundle, published) ?? '',
        h(
          'p',
          null,
          h('a', { href: blob, download: `${proof.id}.bundle.json` }, 'Download the bundle'),
          ' · ',
          h(
            'a',
            { href: '#/verify', onclick: () => sessionStorage.setItem(BUNDLE_HANDOFF, JSON.stringify(bundle, null, 2)) },
            'Open it in the verify page',
          ),
        ),
      );
    } catch (err) {
      out.replaceChildren(errorBox(err));
    }
  });
  return h(
    'div',
    null,
    facts([
      ['Proof', idText(proof.id)],
      ['Outcome', [proof.outcome, sharesText(proof.shares)], { 'data-testid': 'proof-outcome' }],
      ...proofMoneyFacts(proof),
      ['Issued', when(proof.issuedAt)],
      // trailLength/trailHead commit to the trail before the proof.issued entry (docs/protocol.md §11.1),
      // so the escrow's trail above shows at least one entry more than the proof counts.
      [
        'Trail',
        [
          `${proof.trailLength} entries (#0–#${proof.trailLength - 1}: the trail before its proof.issued entry), head `,
          short(proof.trailHead),
        ],
        { 'data-testid': 'proof-trail' },
      ],
      ['Issuer', short(proof.signature.signer, 16)],
      proof.anchor ? ['Anchor', [`${proof.anchor.chain} tx `, short(proof.anchor.txHash)]] : null,
    ]),
    h('details', null, h('summary', null, 'Proof document'), pre(proof)),
    pinControls(),
    verifyBtn,
    out,
  );
}
