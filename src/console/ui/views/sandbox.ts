// Sandbox controls: advance the clock (deadlines then close in the sweep), make the next custody
// settlements fail and retry them, create a demo matter in one click, and refund a settled matter after
// release (docs/protocol.md §24.4) as its payee or arbiter.
import type { Escrow } from '@escrow-settlement/protocol/resources';
import { ApiError, api } from '../api.ts';
import { errorBox, h, idText, inlineForm, mount, section, table, when } from '../dom.ts';
import { refreshPage } from '../refresh.ts';

const UNITS: Record<string, number> = { minutes: 60, hours: 3600, days: 86400 };

let clockReadable = true;
async function clockNow(): Promise<string | null> {
  if (!clockReadable) return null;
  try {
    return (await api.sandbox.clock()).now;
  } catch (err) {
    // GET /v1/sandbox/clock is newer than POST; an older service has only the POST: stop asking.
    if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
      clockReadable = false;
      return null;
    }
    throw err;
  }
}

/** A whole matter through the API: two agents, an escrow, funding and a delivery. */
export async function demoMatter(kind: 'settled' | 'disputed'): Promise<string> {
  const [payer, payee] = await Promise.all([api.agents.create({ label: 'demo payer' }), api.agents.create({ label: 'demo payee' })]);
  const escrow = await api.escrows.create({
    amount: '25',
    asset: 'USDC',
    payerAgentId: payer.id,
    payeeAgentId: payee.id,
    terms: {
      description: 'Demo: a JSON report with a title and a score from 0 to 100',
      checks: [
        { kind: 'shape', requiredFields: ['title', 'score'] },
        { kind: 'predicate', name: 'number-range', params: { pointer: '/score', min: 0, max: 100 } },
      ],
    },
  });
  await api.escrows.fund(escrow.id);
  await api.escrows.deliver(escrow.id, {
    agentId: payee.id,
    payload: kind === 'settled' ? { title: 'Quarterly report', score: 87 } : { title: 'Quarterly report' },
  });
  if (kind === 'disputed') await api.disputes.open(escrow.id, { agentId: payer.id, reason: 'the report has no score' });
  return escrow.id;
}

const TRACKED = 20;
const POLL_MS = 2000;

/** The open escrows with the soonest deadlines, redrawn as they close. */
function deadlinesTable(tracked: Escrow[], now: string | null): HTMLElement {
  if (tracked.length === 0)
    return h('p', null, 'No open escrow has a deadline. Create a disputed demo matter, then advance the clock by 3 days.');
  return table(
    ['escrow', 'state', 'deadline', 'status'],
    tracked.map((e) => [
      h('a', { href: `#/escrows/${e.id}` }, idText(e.id)),
      h('span', { class: `state st-${e.state}`, 'data-testid': 'deadline-state' }, e.state),
      when(e.deadlineAt),
      !e.deadlineAt ? 'closed' : now && e.deadlineAt <= now ? 'due: closes in the next sweep' : 'not due',
    ]),
    `Open escrows with the soonest deadlines (up to ${TRACKED}), refreshed every 2 s`,
  );
}

export async function sandboxView(main: HTMLElement) {
  let now = await clockNow();
  const waiting: Escrow[] = [];
  const due: Array<Escrow & { deadlineAt: string }> = [];
  for (const st of ['funded', 'delivered', 'disputed'] as const) {
    const page = await api.escrows.list({ state: st, limit: 200 });
    waiting.push(...page.escrows.filter((e) => e.custody?.status === 'settle-failed'));
    due.push(...page.escrows.filter((e): e is Escrow & { deadlineAt: string } => Boolean(e.deadlineAt)));
  }
  // Once re-read, a tracked escrow may have closed and lost its deadline: the table says "closed".
  let tracked: Escrow[] = due.sort((a, b) => (a.deadlineAt < b.deadlineAt ? -1 : 1)).slice(0, TRACKED);
  const deadlines = h('div', { 'aria-live': 'polite' }, deadlinesTable(tracked, now));
  const status = h('div', { role: 'status', 'aria-live': 'polite', 'data-testid': 'sandbox-status', 'data-page-status': true });
  const act = (fn: () => Promise<string | void>) => async (e: Event) => {
    e.preventDefault();
    try {
      const msg = await fn();
      if (msg) status.replaceChildren(h('p', null, msg));
    } catch (err) {
      status.replaceChildren(errorBox(err));
    }
  };
  const amount = h('input', { id: 'advance-amount', type: 'number', min: 1, value: 3, required: true });
  const unit = h(
    'select',
    { id: 'advance-unit' },
    Object.keys(UNITS).map((u) => h('option', { value: u, selected: u === 'days' }, u)),
  );
  const clockShown = h('span', { 'data-testid': 'clock-now' }, now ? when(now) : 'not reported by this service');
  const failCount = h('input', { id: 'fail-count', type: 'number', min: 0, max: 1000, value: 1, required: true });
  const refundEscrow = h('input', { id: 'refund-escrow', required: true, placeholder: 'esc_…', autocomplete: 'off', spellcheck: 'false' });
  // The amount goes to the service as typed: it checks the decimal (400 naming amount) and the remaining payout.
  const refundAmount = h('input', { id: 'refund-amount', required: true, inputmode: 'decimal', placeholder: '1.5', autocomplete: 'off' });
  const refundReason = h('input', { id: 'refund-reason', placeholder: 'optional', autocomplete: 'off' });
  const refundSigner = h('input', { id: 'refund-signer', required: true, placeholder: 'agt_…', autocomplete: 'off', spellcheck: 'false' });
  mount(
    main,
    h('h1', null, 'Sandbox controls'),
    h('p', null, 'These routes exist only in the open sandbox; a hosted deployment refuses them (403).'),
    section(
      'Demo matter',
      h(
        'p',
        null,
        'Creates two agents, an escrow, funds it and delivers, in a few seconds. Settled: the delivery passes its checks and the proof is issued. Disputed: the delivery fails a check and the payer opens a dispute, which closes by timeout when you advance the clock past its deadline (3 days).',
      ),
      h(
        'div',
        { class: 'buttons' },
        (['settled', 'disputed'] as const).map((kind) =>
          h(
            'button',
            {
              type: 'button',
              'data-testid': `demo-${kind}`,
              onclick: act(async () => {
                location.hash = `#/escrows/${await demoMatter(kind)}`;
              }),
            },
            `Create a ${kind} demo matter`,
          ),
        ),
      ),
    ),
    section(
      'Clock',
      h(
        'p',
        null,
        'Service time: ',
        clockShown,
        '. Moving it forward makes due deadlines close in the next sweep (about a second); open an escrow page to watch.',
      ),
      h(
        'p',
        { class: 'hint', 'data-testid': 'clock-note' },
        'The clock only moves forward: there is no way back. Its offset is kept in the database, so restarting the service keeps it; to start afresh, start the service with a new ',
        h('code', null, 'DATA_DIR'),
        ' (or ',
        h('code', null, 'DATA_DIR=:memory:'),
        ', which keeps nothing), or with ',
        h('code', null, 'DATABASE_URL'),
        ', on a fresh database.',
      ),
      inlineForm(
        act(async () => {
          const seconds = Number(amount.value) * UNITS[unit.value];
          const r = await api.sandbox.advanceClock(seconds);
          now = r.now;
          clockShown.replaceChildren(when(r.now));
          deadlines.replaceChildren(deadlinesTable(tracked, now));
          return `Clock advanced by ${amount.value} ${unit.value}; service time is now ${r.now}.`;
        }),
        [
          ['Advance by', amount],
          ['Unit', unit, 'sr-only'],
        ],
        ['Advance the clock', 'advance'],
      ),
      h('h3', null, 'Deadlines'),
      deadlines,
    ),
    section(
      'Custody faults',
      inlineForm(
        act(async () => `The next ${(await api.sandbox.failNext(Number(failCount.value))).failNext} settlement attempts will fail.`),
        [['Make the next settlements fail', failCount]],
        ['Set', 'fail-next'],
      ),
      waiting.length === 0
        ? h('p', null, 'No escrow is waiting for a custody retry.')
        : table(
            ['escrow', 'state', 'updated', 'action'],
            waiting.map((e) => [
              h('a', { href: `#/escrows/${e.id}` }, idText(e.id)),
              e.state,
              when(e.updatedAt),
              h(
                'button',
                {
                  type: 'button',
                  onclick: act(async () => {
                    await api.escrows.retryCustody(e.id);
                    // The list is read again: the row of a matter whose settlement went through leaves it.
                    await refreshPage(`Custody confirmed for ${e.id}.`);
                  }),
                },
                'Retry',
              ),
            ]),
            'Escrows whose settlement failed',
          ),
    ),
    section(
      'Refund after release',
      h(
        'p',
        null,
        'Returns part or all of what a settled or resolved matter paid the payee, before its refund deadline. The sandbox signs with the agent you name: the payee (a voluntary refund) or the arbiter (a ruling on a claim). It issues an adjustment proof; the escrow page then shows the refund and the net payouts.',
      ),
      inlineForm(
        act(async () => {
          const escrowId = refundEscrow.value.trim();
          const reason = refundReason.value.trim();
          const r = await api.refunds.create(escrowId, {
            amount: refundAmount.value.trim(),
            ...(reason ? { reason } : {}),
            agentIds: [refundSigner.value.trim()],
          });
          await refreshPage(
            `Refund ${r.refund.id} of ${r.refund.amount} on ${escrowId}: adjustment proof ${r.proof.id}, refunded total ${r.proof.refundedTotal ?? r.refund.amount}.`,
          );
        }),
        [
          ['Escrow', refundEscrow],
          ['Amount', refundAmount],
          ['Reason', refundReason],
          ['Signer agent (payee or arbiter)', refundSigner],
        ],
        ['Refund', 'refund'],
      ),
    ),
    status,
  );
  // Watch them close: each tracked escrow is re-read until the user leaves the page.
  let stopped = false;
  const timer = setInterval(async () => {
    try {
      const [fresh, clock] = await Promise.all([Promise.all(tracked.map((e) => api.escrows.get(e.id))), clockNow()]);
      if (stopped) return;
      tracked = fresh;
      now = clock ?? now;
      if (clock) clockShown.replaceChildren(when(clock));
      deadlines.replaceChildren(deadlinesTable(tracked, now));
    } catch {
      /* keep the last good table */
    }
  }, POLL_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
