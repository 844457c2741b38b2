// The proof of a closed escrow and its offline verification in this page: fetch the bundle once,
// then verifyBundle runs here against the pinned issuer key.
import type { Proof, WitnessState } from '@escrow-settlement/protocol/types';
import { api } from '../api.ts';
import { errorBox, h, pre, short, when } from '../dom.ts';
import { renderChecks, verifyHere } from '../checks.ts';
import { pinControls } from './pinControls.ts';
import { cosignatureList } from '../cosignatures.ts';

export const BUNDLE_HANDOFF = 'escrow-console.bundle';

export function proofSection(proof: Proof): HTMLElement {
  const out = h('div', { class: 'verify-out' });
  const verifyBtn = h('button', { type: 'button', 'data-testid': 'verify-proof' }, 'Verify this proof in the browser');
  verifyBtn.addEventListener('click', async () => {
    out.replaceChildren(h('p', { role: 'status' }, 'Fetching the bundle…'));
    try {
      const [bundle, published] = await Promise.all([
        api.proofs.bundle(proof.id),
        api.log.witnesses().then(
          (r) => r.witnesses,
          (): WitnessState[] => [],
        ),
      ]);
      const { result, pinned } = verifyHere(bundle);
      const blob = URL.createObjectURL(new Blob([JSON.stringify(bundle, null, 2)], { type: 'application/json' }));
      out.replaceChildren(
        renderChecks(result, pinned),
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
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Proof'),
      h('dd', null, h('code', null, proof.id)),
      h('dt', null, 'Outcome'),
      h(
        'dd',
        { 'data-testid': 'proof-outcome' },
        proof.outcome,
        proof.shares ? ` (payer ${proof.shares.payerBps / 100}%, payee ${proof.shares.payeeBps / 100}%)` : '',
      ),
      h('dt', null, 'Issued'),
      h('dd', null, when(proof.issuedAt)),
      h('dt', null, 'Trail'),
      h('dd', null, `${proof.trailLength} entries, head `, short(proof.trailHead)),
      h('dt', null, 'Issuer'),
      h('dd', null, short(proof.signature.signer, 16)),
      proof.anchor ? [h('dt', null, 'Anchor'), h('dd', null, `${proof.anchor.chain} tx `, short(proof.anchor.txHash))] : null,
    ),
    h('details', null, h('summary', null, 'Proof document'), pre(proof)),
    pinControls(),
    verifyBtn,
    out,
  );
}
