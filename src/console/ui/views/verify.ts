// Standalone offline verification: paste or drop a bundle (GET /v1/proofs/{id}/bundle); verifyBundle
// runs in this page against the pinned key. Verifying makes no network request at all.
import { h, mount } from '../dom.ts';
import { renderChecks, verifyHere } from '../checks.ts';
import { pinControls } from './pinControls.ts';
import { BUNDLE_HANDOFF } from './proof.ts';
import { api } from '../api.ts';
import { cosignatureList, type PublishedWitness } from '../cosignatures.ts';
import { bundleMoney } from '../money.ts';

export async function verifyView(main: HTMLElement) {
  // The witness keys the service publishes, read once when the page opens: verifying stays offline.
  const published: PublishedWitness[] = await api.log.witnesses().then(
    (r) => r.witnesses,
    () => [],
  );
  const area = h('textarea', { id: 'bundle-text', rows: 14, spellcheck: 'false', 'aria-describedby': 'bundle-hint' });
  const handed = sessionStorage.getItem(BUNDLE_HANDOFF);
  if (handed) {
    area.value = handed;
    sessionStorage.removeItem(BUNDLE_HANDOFF);
  }
  const out = h('div', { class: 'verify-out', 'data-testid': 'verify-out' });
  const file = h('input', { id: 'bundle-file', type: 'file', accept: 'application/json,.json' });
  const load = async (f: File | undefined) => {
    if (f) area.value = await f.text();
  };
  file.addEventListener('change', () => void load(file.files?.[0]));
  const drop = h(
    'div',
    { class: 'drop' },
    h('label', { for: 'bundle-file' }, 'Or choose a bundle file'),
    ' ',
    file,
    h('span', null, ' (or drop one on the text box)'),
  );
  area.addEventListener('dragover', (e) => e.preventDefault());
  area.addEventListener('drop', (e) => {
    e.preventDefault();
    void load(e.dataTransfer?.files?.[0]);
  });
  const run = () => {
    let bundle: unknown;
    try {
      bundle = JSON.parse(area.value);
    } catch (err) {
      out.replaceChildren(
        h(
          'p',
          { role: 'alert', class: 'verdict bad', 'data-testid': 'verdict' },
          `Not valid: the text is not JSON (${(err as Error).message}).`,
        ),
      );
      return;
    }
    const { result, pinned } = verifyHere(bundle);
    out.replaceChildren(renderChecks(result, pinned), bundleMoney(bundle, result) ?? '', cosignatureList(bundle, published) ?? '');
  };
  mount(
    main,
    h('h1', null, 'Verify a settlement proof offline'),
    h(
      'p',
      null,
      'Paste a bundle from ',
      h('code', null, 'GET /v1/proofs/{id}/bundle'),
      ". Every check (issuer signature, trail chain, log inclusion, checkpoint signature) runs in this page with the client library's verifyBundle; nothing is sent anywhere while verifying.",
    ),
    pinControls(),
    h(
      'form',
      {
        class: 'card',
        onsubmit: (e: Event) => {
          e.preventDefault();
          run();
        },
      },
      h('label', { for: 'bundle-text' }, 'Bundle (JSON)'),
      area,
      h('p', { id: 'bundle-hint', class: 'hint' }, 'One changed byte anywhere makes a check fail, and the list says which.'),
      drop,
      h('button', { type: 'submit', 'data-testid': 'verify-run' }, 'Verify'),
    ),
    out,
  );
}
