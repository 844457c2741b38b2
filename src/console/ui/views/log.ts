// Log explorer: size and signed head, the checkpoint note, entries page by page, a leaf's inclusion
// path drawn to the root, and a consistency proof between two sizes checked in the browser.
import { api } from '../api.ts';
import { badge, errorBox, facts, h, idText, inlineForm, mount, pre, section, short, table, when } from '../dom.ts';
import { verifyConsistency } from '@escrow-settlement/protocol/verify';
import { inclusionDrawing } from './inclusion.ts';
import { witnessesSection } from './witnesses.ts';

const PAGE = 20;

export async function logView(main: HTMLElement, _p: Record<string, string>, query: URLSearchParams) {
  // With witnesses configured the checkpoint is 503 until one has its quorum: say so, not fail the page.
  const [head, checkpoint, witnesses] = await Promise.all([
    api.log.head(),
    api.log.checkpoint().catch((err: Error) => `(no checkpoint served yet: ${err.message})`),
    witnessesSection(),
  ]);
  const size = head.logSize;
  const start = Math.min(Math.max(0, Number(query.get('start') ?? Math.max(0, size - PAGE)) || 0), Math.max(0, size - 1));
  const { entries } = size ? await api.log.entries({ start, end: Math.min(size, start + PAGE) }) : { entries: [] };
  const inclusionOut = h('div', { 'aria-live': 'polite' });
  const showInclusion = async (proofId: string) => {
    try {
      inclusionOut.replaceChildren(inclusionDrawing(await api.log.inclusion(proofId)));
      inclusionOut.scrollIntoView({ block: 'nearest' });
    } catch (err) {
      inclusionOut.replaceChildren(errorBox(err));
    }
  };
  const first = h('input', {
    id: 'cons-first',
    type: 'number',
    min: 1,
    max: size,
    value: Math.max(1, Math.floor(size / 2)),
    required: true,
  });
  const second = h('input', { id: 'cons-second', type: 'number', min: 1, max: size, value: size, required: true });
  const consOut = h('div', { 'aria-live': 'polite' });
  const consistency = async (e: Event) => {
    e.preventDefault();
    try {
      const c = await api.log.consistency(first.valueAsNumber, second.valueAsNumber);
      const r = verifyConsistency(c);
      consOut.replaceChildren(
        h('p', { 'data-testid': 'consistency' }, badge(r.ok, 'consistent (checked here)', 'not consistent'), ' ', r.checks[0].detail),
        table(
          ['size', 'root'],
          [
            [String(c.firstSize), short(c.firstRoot, 24)],
            [String(c.secondSize), short(c.secondRoot, 24)],
          ],
        ),
        c.path.length
          ? h('details', null, h('summary', null, `${c.path.length} proof hashes`), pre(c.path.join('\n')))
          : h('p', null, 'Empty path (equal sizes).'),
      );
    } catch (err) {
      consOut.replaceChildren(errorBox(err));
    }
  };
  const pageLink = (st: number, label: string) => h('a', { href: `#/log?start=${st}` }, label);
  mount(
    main,
    h('h1', null, 'Transparency log'),
    facts([
      ['Size', String(size), { 'data-testid': 'log-size' }],
      ['Root', short(head.rootHash, 24)],
      ['Signed', [when(head.signedAt), ' by ', h('code', null, head.keyId)]],
    ]),
    section(
      'Checkpoint',
      h(
        'p',
        null,
        'The served checkpoint as a C2SP signed note (the issuer signature, then any witness cosignatures), for standard transparency tooling, witnesses and monitors.',
      ),
      pre(checkpoint),
    ),
    witnesses,
    section(
      `Entries ${size ? `${start}–${start + entries.length - 1}` : ''}`,
      entries.length === 0
        ? h('p', null, 'The log is empty.')
        : table(
            ['leaf', 'proof', 'escrow', 'outcome', 'issued', 'inclusion'],
            entries.map((e) => [
              String(e.leafIndex),
              idText(e.proof.id),
              h('a', { href: `#/escrows/${e.proof.escrowId}` }, idText(e.proof.escrowId)),
              e.proof.outcome,
              when(e.proof.issuedAt),
              h(
                'button',
                {
                  type: 'button',
                  class: 'small',
                  onclick: () => void showInclusion(e.proof.id),
                  'aria-label': `Show the inclusion path of leaf ${e.leafIndex}`,
                },
                'Inclusion path',
              ),
            ]),
          ),
      h(
        'nav',
        { class: 'pager', 'aria-label': 'Log pages' },
        start > 0 ? pageLink(Math.max(0, start - PAGE), '« Earlier') : null,
        start + PAGE < size ? pageLink(start + PAGE, 'Later »') : null,
      ),
      inclusionOut,
    ),
    section(
      'Consistency',
      size < 1
        ? h('p', null, 'Needs at least one leaf.')
        : inlineForm(
            consistency,
            [
              ['From size', first],
              ['to size', second],
            ],
            ['Prove consistency'],
          ),
      consOut,
    ),
  );
}
