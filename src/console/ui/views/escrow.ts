// One escrow: its money (fee, payouts, refunds after release), state machine, trail (each hash
// rechecked here), events, webhook attempts, custody journal, dispute and proof. Polls every 2 s so
// deadlines closing (sandbox clock) show on screen.
import type { CustodyEntry, Dispute, Escrow, WebhookAttempt } from '@escrow-settlement/protocol/resources';
import type { Proof, TrailEntry } from '@escrow-settlement/protocol/types';
import type { EngineEvent } from '@escrow-settlement/protocol/webhook';
import { ApiError, api } from '../api.ts';
import { errorBox, type Fact, facts, h, idText, mount, plural, pre, section, sharesText, short, table, when } from '../dom.ts';
import { pathTaken, stateMachine } from './stateMachine.ts';
import { trailTimeline } from './trail.ts';
import { proofSection } from './proof.ts';
import { feeText, netPayouts, payoutsText } from '../money.ts';

const POLL_MS = 2000;
const TERMINAL = new Set(['settled', 'resolved', 'refunded']);
const orNull = async <T>(p: Promise<T>): Promise<T | null> =>
  p.catch((e) => {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  });

/** The escrow's custody status in words: "settled" means the funds moved; the journal says to whom. */
function custodyLabel(e: Escrow, journal: CustodyEntry | null): string {
  const status = e.custody?.status;
  if (!status) return '—';
  if (status === 'locked') return 'locked (funds held)';
  if (status === 'settle-failed') return 'settlement failed (retry below)';
  if (status !== 'settled') return status;
  if (!journal) return e.state === 'refunded' ? 'settled: returned to the payer' : 'settled';
  const [payer, payee] = [Number(journal.payerAmount), Number(journal.payeeAmount)];
  if (payee === 0) return `settled: returned to the payer (${journal.payerAmount} ${e.asset})`;
  if (payer === 0) return `settled: paid to the payee (${journal.payeeAmount} ${e.asset})`;
  return `settled: split, ${journal.payerAmount} ${e.asset} to the payer and ${journal.payeeAmount} to the payee`;
}

export async function escrowView(main: HTMLElement, params: Record<string, string>) {
  const id = params.id;
  let shown = '';
  let stopped = false;

  async function load() {
    const [escrow, trail, events, attempts] = await Promise.all([
      api.escrows.get(id),
      api.escrows.trail(id),
      api.escrows.events(id),
      api.webhooks.attempts({ escrowId: id }),
    ]);
    // Ask only for what the trail says exists, so an open matter does not answer with 404s.
    const seen = new Set<string>(trail.entries.map((t) => t.event));
    const settling = TERMINAL.has(escrow.state) || escrow.custody?.status === 'settle-failed';
    const [custody, dispute, proof, now] = await Promise.all([
      settling ? orNull(api.escrows.custody(id)) : null,
      seen.has('dispute.opened') ? orNull(api.disputes.get(id)) : null,
      seen.has('proof.issued') ? orNull(api.escrows.proof(id)) : null,
      // The refund deadline is judged by the service's clock (the sandbox's may run ahead of this browser's).
      escrow.refundDeadline
        ? api.sandbox.clock().then(
            (c) => c.now,
            () => null,
          )
        : null,
    ]);
    shown = version(escrow, attempts.attempts);
    render(escrow, trail, events.events, attempts.attempts.slice().reverse(), custody, dispute, proof, now);
  }
  const version = (e: Escrow, a: WebhookAttempt[]) =>
    `${e.updatedAt}|${e.state}|${e.custody?.status}|${e.refundedTotal ?? ''}|${a[0]?.id ?? ''}`;

  function render(
    e: Escrow,
    trail: { entries: TrailEntry[]; intactUpTo: number | null },
    events: EngineEvent[],
    attempts: WebhookAttempt[],
    custody: CustodyEntry | null,
    dispute: Dispute | null,
    proof: Proof | null,
    now: string | null,
  ) {
    const path = pathTaken(
      trail.entries.map((t) => t.event),
      e.state,
    );
    const role = (k: string) =>
      k === e.payer.publicKey ? 'payer' : k === e.payee.publicKey ? 'payee' : k === e.arbiter?.publicKey ? 'arbiter' : 'key';
    mount(
      main,
      h('p', { class: 'crumbs' }, h('a', { href: '#/escrows' }, 'Escrows'), ' / ', id),
      h('h1', null, 'Escrow ', idText(id), ' ', h('span', { class: `state st-${e.state}`, 'data-testid': 'escrow-state' }, e.state)),
      facts([
        ['Amount', `${e.amount} ${e.asset}`],
        ['Payer', [short(e.payer.publicKey, 16), e.payer.label ? ` (${e.payer.label})` : '']],
        ['Payee', [short(e.payee.publicKey, 16), e.payee.label ? ` (${e.payee.label})` : '']],
        e.arbiter ? ['Arbiter', short(e.arbiter.publicKey, 16)] : null,
        ['Terms', [e.terms.description, ` (${plural(e.terms.checks.length, 'check')}: ${e.terms.checks.map((c) => c.kind).join(', ')})`]],
        ['Deadline', when(e.deadlineAt), { 'data-testid': 'deadline' }],
        ['Custody', custodyLabel(e, custody), { 'data-testid': 'custody' }],
        ['Created', when(e.createdAt)],
      ]),
      failedVerdict(e, trail.entries),
      e.custody?.status === 'settle-failed' ? retryCustody() : null,
      moneySection(e, proof, trail.entries, now, role),
      section('State machine', stateMachine(path, e.state)),
      section('Trail', trailTimeline(trail.entries, trail.intactUpTo)),
      section(
        'Events',
        events.length === 0
          ? h('p', null, 'No events.')
          : table(
              ['#', 'event', 'at', 'data'],
              events.map((ev, i) => [
                String(i),
                h('code', null, ev.event),
                when(ev.at),
                h('details', null, h('summary', null, 'data'), pre(ev.data)),
              ]),
              'Events exactly as webhooks receive them',
            ),
      ),
      section(
        'Webhook attempts',
        attempts.length === 0
          ? h('p', null, 'No webhook attempts (no URL registered, or none sent yet).')
          : table(
              ['event', 'url', 'attempt', 'result', 'duration', 'at'],
              attempts.map((a) => [
                h('code', null, `${a.index} ${a.event}`),
                a.url,
                String(a.attempt),
                h(
                  'span',
                  { class: a.outcome === 'delivered' ? 'badge ok' : 'badge bad' },
                  a.status ? `HTTP ${a.status}` : (a.error ?? ''),
                  ` (${a.outcome})`,
                ),
                `${a.durationMs} ms`,
                when(a.at),
              ]),
              'Every POST to every registered URL, oldest first',
            ),
      ),
      section(
        'Custody journal',
        custody
          ? facts(
              Object.entries(custody)
                .filter(([k]) => k !== 'escrowId')
                .map(([k, v]): Fact => [k, typeof v === 'object' ? pre(v) : String(v)]),
            )
          : h('p', null, 'No settlement attempted yet.'),
      ),
      section('Dispute', dispute ? disputeBlock(dispute, e, role) : h('p', null, 'No dispute.')),
      section('Proof', proof ? proofSection(proof) : h('p', null, 'The matter has not closed: no proof yet.')),
    );
  }

  function retryCustody() {
    const out = h('span', { role: 'status' });
    return h(
      'div',
      { class: 'card warn' },
      h('p', null, 'The last settlement attempt failed; custody keeps the journal entry for a retry.'),
      h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            try {
              await api.escrows.retryCustody(id);
              out.textContent = 'Custody confirmed.';
              await load();
            } catch (err) {
              out.replaceChildren(errorBox(err));
            }
          },
        },
        'Retry custody settlement',
      ),
      ' ',
      out,
    );
  }

  await load();
  const timer = setInterval(async () => {
    if (stopped) return;
    try {
      const [e, a] = await Promise.all([api.escrows.get(id), api.webhooks.attempts({ escrowId: id, limit: 1 })]);
      if (version(e, a.attempts) !== shown && !stopped) await load();
    } catch {
      /* keep showing the last good page */
    }
  }, POLL_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/**
 * When the latest verdict failed, which of the terms' checks failed, on the page itself (not only
 * inside a collapsed trail entry): the verdict's trail entry names the failing checks' kinds.
 */
function failedVerdict(e: Escrow, entries: TrailEntry[]) {
  const last = entries.findLast((t) => t.event === 'verdict.passed' || t.event === 'verdict.failed');
  if (last?.event !== 'verdict.failed') return null;
  const failed = new Set(((last.body as { failed?: unknown }).failed as string[] | undefined) ?? []);
  const checks = e.terms.checks.filter((c) => failed.has(c.kind));
  return h(
    'div',
    { class: 'card warn', 'data-testid': 'failed-checks' },
    h(
      'p',
      null,
      'The delivery failed its verdict at ',
      when(last.at),
      `: ${plural(checks.length, 'check')} of ${e.terms.checks.length} failed.`,
    ),
    h(
      'ul',
      null,
      checks.map((c) => {
        const { kind, ...rest } = c as { kind: string } & Record<string, unknown>;
        return h('li', null, h('code', null, kind), ' ', h('code', { class: 'check-def' }, JSON.stringify(rest)));
      }),
    ),
    e.state === 'delivered'
      ? h('p', null, 'Next: a refund to the payer, or a dispute opened by either party; at the deadline it refunds.')
      : null,
  );
}

/**
 * Where the money went (docs/protocol.md §24): the fee, the closing proof's payouts, every refund
 * after release with its adjustment proof, the refunded total and the net payouts after it, the
 * refund deadline judged by the service clock, and the payer's refund requests from the trail.
 * Nothing for a matter with no fee that has not paid the payee.
 */
function moneySection(e: Escrow, proof: Proof | null, entries: TrailEntry[], now: string | null, role: (k: string) => string) {
  const payouts = proof?.payouts;
  if (!e.fee && !payouts && !e.refundDeadline && !e.refunds?.length) return null;
  const refunded = e.refundedTotal ?? '0';
  const net = payouts ? netPayouts(payouts, refunded) : null;
  const body = (t: TrailEntry) => t.body as Record<string, unknown>;
  // Each refund's adjustment proof, from its refund.issued entry.
  const proofOf = new Map(
    entries.filter((t) => t.event === 'refund.issued').map((t) => [String(body(t).refundId), String(body(t).proofId)]),
  );
  const requests = entries.filter((t) => t.event === 'refund.requested');
  const refunds = e.refunds ?? [];
  const clock = now ?? new Date().toISOString();
  const passed = e.refundDeadline ? Date.parse(e.refundDeadline) <= Date.parse(clock) : false;
  const by = now ? 'by the service clock' : "by this browser's clock (the service clock could not be read)";
  return section(
    'Money',
    facts([
      e.fee ? ['Fee', feeText({ ...e.fee, amount: proof?.fee?.amount }, e.asset), { 'data-testid': 'fee' }] : null,
      payouts
        ? [
            'Payouts at closing',
            [payoutsText(payouts, e.asset), proof?.captured !== undefined ? ` (captured ${proof.captured} of ${e.amount})` : ''],
            { 'data-testid': 'closing-payouts' },
          ]
        : null,
      e.refundDeadline ? ['Refunded', `${refunded} ${e.asset}`, { 'data-testid': 'refunded-total' }] : null,
      net && refunds.length ? ['Net payouts after refunds', payoutsText(net, e.asset), { 'data-testid': 'net-payouts' }] : null,
      e.refundDeadline
        ? [
            'Refund deadline',
            [when(e.refundDeadline), passed ? ` (passed ${by}: no more refunds)` : ` (open ${by})`],
            { 'data-testid': 'refund-deadline' },
          ]
        : payouts && Number(payouts.payee) > 0
          ? ['Refund deadline', 'none: this matter allows no refund after release']
          : null,
    ]),
    refunds.length
      ? table(
          ['amount', 'reason', 'by', 'at', 'adjustment proof'],
          refunds.map((r) => [
            `${r.amount} ${e.asset}`,
            r.reason || '—',
            [role(r.by), ' ', short(r.by)],
            when(r.at),
            proofOf.has(r.id) ? idText(proofOf.get(r.id)!) : '—',
          ]),
          'Refunds after release, oldest first',
        )
      : e.refundDeadline
        ? h('p', null, 'No refund after release.')
        : null,
    requests.length
      ? table(
          ['amount', 'reason', 'by', 'at'],
          requests.map((t) => [
            `${String(body(t).amount)} ${e.asset}`,
            String(body(t).reason ?? '') || '—',
            [role(String(body(t).by)), ' ', short(String(body(t).by))],
            when(t.at),
          ]),
          'Refund requests by the payer (no money moves until the payee or the arbiter refunds)',
        )
      : null,
  );
}

function disputeBlock(d: Dispute, e: Escrow, role: (k: string) => string) {
  const r = d.ruling;
  const signers = !r
    ? []
    : r.decidedBy === 'co-signature'
      ? [`payer ${e.payer.publicKey}`, `payee ${e.payee.publicKey}`]
      : r.decidedBy === 'arbiter'
        ? [`arbiter ${e.arbiter?.publicKey}`]
        : [];
  return h(
    'div',
    null,
    facts([
      ['Dispute', [idText(d.id), ' ', h('span', { class: 'state', 'data-testid': 'dispute-state' }, d.state)]],
      ['Opened by', [role(d.openedBy), ' ', short(d.openedBy), ' at ', when(d.openedAt)]],
      ['Reason', d.reason || '—'],
    ]),
    h('h3', null, 'Evidence'),
    d.evidence.length === 0
      ? h('p', null, 'None.')
      : table(
          ['party', 'content hash', 'note', 'at'],
          d.evidence.map((ev) => [`${role(ev.party)} `, short(ev.contentHash), ev.note || '—', when(ev.submittedAt)]),
        ),
    h('h3', null, 'Ruling'),
    !r
      ? h('p', null, 'Not ruled yet. It closes by a co-signed or arbiter-signed ruling, or by timeout at the deadline.')
      : facts(
          [
            ['Outcome', [r.outcome, sharesText(r.shares)]],
            ['Decided by', r.decidedBy],
            [
              'Signed by',
              signers.length
                ? h(
                    'ul',
                    null,
                    signers.map((x) => h('li', null, h('code', null, x))),
                  )
                : 'nobody: the deadline passed in silence (timeoutRuling)',
            ],
            ['Rationale', r.rationale || '—'],
            ['Decided at', when(r.decidedAt)],
          ],
          { 'data-testid': 'ruling' },
        ),
  );
}
