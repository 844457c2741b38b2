// The trail as a timeline: each entry's hash is recomputed here (sha256 of JCS) and its prevHash is
// checked against the entry before it, so a broken link shows without trusting the server's word.
import { GENESIS_HASH, trailEntryHash } from '@escrow-settlement/protocol/verify';
import type { TrailEntry } from '@escrow-settlement/protocol/types';
import { badge, h, pre, short, when } from '../dom.ts';

export function trailTimeline(entries: TrailEntry[], serverIntactUpTo: number | null): HTMLElement {
  let firstBreak: number | null = null;
  const items = entries.map((e, i) => {
    let recomputed = '';
    try {
      recomputed = trailEntryHash(e);
    } catch {
      recomputed = '';
    }
    const hashOk = recomputed === e.hash;
    const expectedPrev = i === 0 ? GENESIS_HASH : entries[i - 1].hash;
    const linkOk = e.prevHash === expectedPrev && e.index === i;
    if ((!hashOk || !linkOk) && firstBreak === null) firstBreak = i;
    const focusPrev = () => document.getElementById(`trail-${i - 1}`)?.focus();
    return h(
      'li',
      { id: `trail-${i}`, tabindex: -1, class: hashOk && linkOk ? 'entry ok' : 'entry bad', 'data-event': e.event },
      h(
        'div',
        { class: 'entry-head' },
        h('span', { class: 'idx' }, `#${e.index}`),
        ' ',
        h('code', { class: 'event' }, e.event),
        ' ',
        when(e.at),
      ),
      h(
        'div',
        { class: 'links' },
        'prevHash ',
        short(e.prevHash),
        ' ',
        i === 0
          ? h('span', null, e.prevHash === GENESIS_HASH ? '(genesis)' : '(should be genesis)')
          : h(
              'button',
              { type: 'button', class: 'link', onclick: focusPrev, 'aria-label': `go to entry ${i - 1}, whose hash this prevHash names` },
              `↑ #${i - 1}`,
            ),
        ' ',
        badge(linkOk, 'links to previous', 'broken link'),
        ' hash ',
        short(e.hash),
        ' ',
        badge(hashOk, 'recomputed here', 'does not recompute'),
      ),
      h('details', null, h('summary', null, 'body'), pre(e.body)),
    );
  });
  const agree = firstBreak === serverIntactUpTo;
  return h(
    'div',
    null,
    h(
      'p',
      { 'data-testid': 'trail-check' },
      firstBreak === null
        ? `All ${entries.length} entries chain from genesis; every hash was recomputed in this browser.`
        : `Broken at entry ${firstBreak}.`,
      agree ? ' The service says the same.' : ` The service says intactUpTo = ${serverIntactUpTo}.`,
    ),
    h('ol', { class: 'timeline', start: 0 }, items),
  );
}
