// Webhooks: registered endpoints (a disabled one with why and an enable button), recent deliveries
// with every attempt, and dead letters with a redeliver button (the event goes back to the outbox for its URL).
import type { WebhookAttempt } from '@escrow-settlement/protocol/resources';
import { api } from '../api.ts';
import { errorBox, h, idText, inlineForm, mount, pre, section, short, table, when } from '../dom.ts';
import { refreshPage } from '../refresh.ts';

export async function webhooksView(main: HTMLElement, _p: Record<string, string>, query: URLSearchParams) {
  const cursor = query.get('cursor');
  const [hooks, attempts, dead] = await Promise.all([
    api.webhooks.list(),
    api.webhooks.attempts({ limit: 50, cursor: cursor ?? undefined }),
    api.webhooks.deadLetters(),
  ]);
  const url = h('input', { id: 'hook-url', type: 'url', required: true, placeholder: 'https://example.com/hooks' });
  const regOut = h('span', { role: 'status' });
  const register = async (e: Event) => {
    e.preventDefault();
    try {
      await api.webhooks.register(url.value);
      location.hash = '#/webhooks';
      await webhooksView(main, {}, new URLSearchParams());
    } catch (err) {
      regOut.replaceChildren(errorBox(err));
    }
  };
  // Deliveries: attempts grouped by (event, url), newest first as the API pages them.
  const groups = new Map<string, WebhookAttempt[]>();
  for (const a of attempts.attempts) {
    const k = `${a.escrowId}.${a.index} ${a.url}`;
    (groups.get(k) ?? groups.set(k, []).get(k)!).push(a);
  }
  const deadOut = h('div', { role: 'status', 'data-testid': 'redeliver-status', 'data-page-status': true });
  mount(
    main,
    h('h1', null, 'Webhooks'),
    section(
      'Endpoints',
      h('p', null, 'Signing key (pin it to verify deliveries): ', short(hooks.signingKey, 24)),
      hooks.endpoints.length
        ? h(
            'ul',
            null,
            hooks.endpoints.map((ep) =>
              h(
                'li',
                { 'data-testid': 'endpoint', 'data-disabled': String(ep.disabled) },
                h('code', null, ep.url),
                ep.disabled
                  ? [
                      ' ',
                      h('span', { class: 'badge bad' }, 'disabled'),
                      ' since ',
                      when(ep.disabledAt),
                      `: ${ep.disabledReason ?? ''} `,
                      h(
                        'button',
                        {
                          type: 'button',
                          'data-testid': 'enable',
                          'aria-label': `Enable ${ep.url} again`,
                          onclick: async (e: Event) => {
                            (e.target as HTMLButtonElement).disabled = true;
                            try {
                              await api.webhooks.enable(ep.url);
                              await webhooksView(main, {}, query);
                            } catch (err) {
                              regOut.replaceChildren(errorBox(err));
                            }
                          },
                        },
                        'Enable',
                      ),
                    ]
                  : ep.failingSince
                    ? [' ', h('span', { class: 'badge bad' }, 'failing'), ' since ', when(ep.failingSince)]
                    : null,
              ),
            ),
          )
        : h('p', null, 'No endpoint registered.'),
      inlineForm(register, [['Register a URL', url]], ['Register'], regOut),
    ),
    section(
      'Deliveries',
      groups.size === 0
        ? h('p', null, 'No attempts yet.')
        : table(
            ['event', 'url', 'attempts'],
            [...groups.values()].map((as) => [
              h(
                'span',
                null,
                h('a', { href: `#/escrows/${as[0].escrowId}` }, idText(as[0].escrowId)),
                ` #${as[0].index} `,
                h('code', null, as[0].event),
              ),
              as[0].url,
              h(
                'ol',
                { class: 'attempts' },
                as
                  .slice()
                  .reverse()
                  .map((a) =>
                    h(
                      'li',
                      { 'data-outcome': a.outcome },
                      h(
                        'span',
                        { class: a.outcome === 'delivered' ? 'badge ok' : 'badge bad' },
                        a.status ? `HTTP ${a.status}` : (a.error ?? '?'),
                      ),
                      ` ${a.outcome}, ${a.durationMs} ms, `,
                      when(a.at),
                    ),
                  ),
              ),
            ]),
            'Recent deliveries (50 attempts per page), each with its attempts in order',
          ),
      attempts.nextCursor
        ? h(
            'nav',
            { class: 'pager', 'aria-label': 'Delivery pages' },
            h('a', { href: `#/webhooks?cursor=${attempts.nextCursor}` }, 'Older »'),
          )
        : null,
    ),
    section(
      'Dead letters',
      dead.deadLetters.length === 0
        ? h('p', { 'data-testid': 'no-dead-letters' }, 'No dead letters.')
        : table(
            ['id', 'event', 'url', 'attempts', 'last error', 'dead at', 'action'],
            dead.deadLetters.map((d) => [
              idText(d.id),
              h(
                'span',
                null,
                h('a', { href: `#/escrows/${d.event.escrowId}` }, idText(d.event.escrowId)),
                ' ',
                h('code', null, d.event.event),
              ),
              d.url,
              String(d.attempts),
              d.lastError,
              when(d.deadAt),
              h(
                'button',
                {
                  type: 'button',
                  'data-testid': 'redeliver',
                  'aria-label': `Redeliver ${d.event.event} of ${d.event.escrowId} to ${d.url}`,
                  onclick: async (e: Event) => {
                    (e.target as HTMLButtonElement).disabled = true;
                    try {
                      await api.webhooks.redeliver(d.id);
                      // Read again: the dead letter leaves the list, its new attempts join Deliveries.
                      await refreshPage(`Queued ${d.id} for redelivery to ${d.url}; its attempts appear under Deliveries.`);
                    } catch (err) {
                      deadOut.replaceChildren(errorBox(err));
                    }
                  },
                },
                'Redeliver',
              ),
            ]),
          ),
      deadOut,
      dead.deadLetters.length ? h('details', null, h('summary', null, 'Dead-letter records'), pre(dead.deadLetters)) : null,
    ),
  );
}
