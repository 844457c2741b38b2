// Escrow list, newest first (the list API's order=newest, docs/protocol.md §9.3): filter by state,
// paged with the list API's cursor (limit 20).
import type { EscrowState } from '@escrow-settlement/protocol/resources';
import { api, hosted } from '../api.ts';
import { h, idText, mount, short, table, when } from '../dom.ts';

const STATES = ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'];
const PAGE = 20;

export async function escrowListView(main: HTMLElement, _p: Record<string, string>, query: URLSearchParams) {
  const state = query.get('state') ?? '';
  const cursor = query.get('cursor') ?? '';
  // A state typed into the address goes to the service as it is: its 400 names the field and the page shows it.
  const page = await api.escrows.list({
    limit: PAGE,
    order: 'newest',
    state: (state || undefined) as EscrowState | undefined,
    cursor: cursor || undefined,
  });
  const link = (over: Record<string, string>) => {
    const p = new URLSearchParams();
    const s = over.state ?? state;
    if (s) p.set('state', s);
    if (over.cursor) p.set('cursor', over.cursor);
    return `#/escrows${p.size ? `?${p}` : ''}`;
  };
  const select = h(
    'select',
    {
      id: 'state-filter',
      onchange: (e: Event) => {
        location.hash = link({ state: (e.target as HTMLSelectElement).value });
      },
    },
    h('option', { value: '' }, 'any state'),
    STATES.map((s) => h('option', { value: s, selected: s === state }, s)),
  );
  mount(
    main,
    h('h1', null, 'Escrows'),
    h('div', { class: 'toolbar' }, h('label', { for: 'state-filter' }, 'State'), select),
    page.escrows.length === 0
      ? h('p', { class: 'empty' }, state ? `No escrow is ${state}.` : 'No escrows yet. ', state ? null : emptyHint())
      : table(
          ['escrow', 'state', 'amount', 'payer', 'payee', 'created', 'deadline'],
          page.escrows.map((e) => [
            h('a', { href: `#/escrows/${e.id}` }, idText(e.id)),
            h('span', { class: `state st-${e.state}` }, e.state),
            `${e.amount} ${e.asset}`,
            short(e.payer.publicKey),
            short(e.payee.publicKey),
            when(e.createdAt),
            when(e.deadlineAt),
          ]),
          `Escrows${state ? ` in state ${state}` : ''}, newest first, ${PAGE} per page`,
        ),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      cursor ? h('a', { href: link({}) }, '« First page') : null,
      page.nextCursor ? h('a', { href: link({ cursor: page.nextCursor }), rel: 'next' }, 'Next page »') : null,
    ),
  );
}

/**
 * What to do about an empty list. The sandbox page makes demo matters, but a hosted deployment has no
 * sandbox page (its link would lead to "Not found"): there escrows come from the API.
 */
function emptyHint() {
  return hosted()
    ? ['Escrows are created through the API (', h('a', { href: '/docs' }, 'API reference'), ').']
    : h('a', { href: '#/sandbox' }, 'Create a demo matter');
}
