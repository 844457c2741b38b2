// The escrow state machine as one table: state × operation → next state (docs/protocol.md §4.1).
import { invalidState } from '../errors.ts';
import type { EscrowState } from '@escrow-settlement/protocol/resources';

export type { EscrowState };
export const TERMINAL: ReadonlySet<EscrowState> = new Set(['settled', 'resolved', 'refunded']);

export type Operation = 'fund' | 'deliver' | 'refund' | 'dispute' | 'evidence' | 'resolve' | 'custody-retry' | 'timeout';

/** What the command needs to know beyond the state. */
export interface Facts {
  state: EscrowState;
  verdict: 'none' | 'passed' | 'failed';
  custodyStatus: 'unfunded' | 'locked' | 'settle-failed' | 'settled';
}

interface Row {
  from: EscrowState;
  when?: (f: Facts) => boolean;
  /** Said in the 409 when `when` does not hold. */
  unless?: string;
  to: EscrowState;
}

const custodyIdle = (f: Facts) => f.custodyStatus !== 'settle-failed';
const failedVerdict = (f: Facts) => f.verdict === 'failed' && custodyIdle(f);

export const TABLE: Record<Operation, Row[]> = {
  fund: [{ from: 'created', to: 'funded' }],
  // delivered, then settled when the verdict passes and custody confirms (close).
  deliver: [{ from: 'funded', when: custodyIdle, unless: 'awaiting a custody retry', to: 'delivered' }],
  refund: [
    { from: 'funded', when: custodyIdle, unless: 'awaiting a custody retry', to: 'refunded' },
    { from: 'delivered', when: failedVerdict, unless: 'a refund after delivery needs a failed verdict', to: 'refunded' },
  ],
  dispute: [{ from: 'delivered', when: failedVerdict, unless: 'a dispute can only be opened after a failed verdict', to: 'disputed' }],
  evidence: [{ from: 'disputed', when: custodyIdle, unless: 'the ruling is awaiting a custody retry', to: 'disputed' }],
  resolve: [{ from: 'disputed', when: custodyIdle, unless: 'the ruling is awaiting a custody retry', to: 'resolved' }],
  'custody-retry': [
    // The target state comes from the journaled closing; any pre-terminal state may be waiting.
    ...(['funded', 'delivered', 'disputed'] as const).map((from) => ({
      from,
      when: (f: Facts) => f.custodyStatus === 'settle-failed',
      unless: 'no failed settlement is waiting',
      to: from,
    })),
  ],
  timeout: [
    { from: 'funded', when: custodyIdle, to: 'refunded' },
    { from: 'delivered', when: failedVerdict, to: 'refunded' },
    { from: 'disputed', when: custodyIdle, to: 'resolved' },
  ],
};

/** The next state for `op`, or 409 invalid_state saying what the state allows. */
export function transition(op: Operation, f: Facts): EscrowState {
  const rows = TABLE[op];
  const row = rows.find((r) => r.from === f.state);
  if (row && (!row.when || row.when(f))) return row.to;
  if (row?.unless) throw invalidState(`cannot ${op} this escrow: ${row.unless} (state ${f.state})`);
  const allowed = [...new Set(rows.map((r) => r.from))].join(', ');
  throw invalidState(`cannot ${op} an escrow in state ${f.state}; allowed from: ${allowed}`);
}
