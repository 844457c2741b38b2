import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TABLE, transition, type EscrowState, type Facts, type Operation } from '../../src/escrow/states.ts';
import { AppError } from '../../src/errors.ts';

const STATES: EscrowState[] = ['created', 'funded', 'delivered', 'settled', 'disputed', 'resolved', 'refunded'];
const ok = (state: EscrowState, verdict: Facts['verdict'] = 'none', custodyStatus: Facts['custodyStatus'] = 'locked'): Facts => ({
  state,
  verdict,
  custodyStatus,
});

// One row per (operation, situation): the expected next state, or null for 409 invalid_state.
const ROWS: Array<[Operation, Facts, EscrowState | null]> = [
  ['fund', ok('created', 'none', 'unfunded'), 'funded'],
  ...STATES.filter((s) => s !== 'created').map((s): [Operation, Facts, null] => ['fund', ok(s), null]),
  ['deliver', ok('funded'), 'delivered'],
  ['deliver', ok('funded', 'none', 'settle-failed'), null],
  ...STATES.filter((s) => s !== 'funded').map((s): [Operation, Facts, null] => ['deliver', ok(s), null]),
  ['refund', ok('funded'), 'refunded'],
  ['refund', ok('delivered', 'failed'), 'refunded'],
  ['refund', ok('delivered', 'passed', 'settle-failed'), null],
  ['refund', ok('disputed', 'failed'), null],
  ['refund', ok('created', 'none', 'unfunded'), null],
  ['refund', ok('settled', 'passed', 'settled'), null],
  ['refund', ok('refunded', 'none', 'settled'), null],
  ['refund', ok('resolved', 'failed', 'settled'), null],
  ['dispute', ok('delivered', 'failed'), 'disputed'],
  ['dispute', ok('delivered', 'passed', 'settle-failed'), null],
  ['dispute', ok('funded'), null],
  ['dispute', ok('disputed', 'failed'), null],
  ['dispute', ok('settled', 'passed', 'settled'), null],
  ['evidence', ok('disputed', 'failed'), 'disputed'],
  ['evidence', ok('resolved', 'failed', 'settled'), null],
  ['evidence', ok('delivered', 'failed'), null],
  ['resolve', ok('disputed', 'failed'), 'resolved'],
  ['resolve', ok('disputed', 'failed', 'settle-failed'), null],
  ['resolve', ok('resolved', 'failed', 'settled'), null],
  ['custody-retry', ok('funded', 'none', 'settle-failed'), 'funded'],
  ['custody-retry', ok('delivered', 'passed', 'settle-failed'), 'delivered'],
  ['custody-retry', ok('disputed', 'failed', 'settle-failed'), 'disputed'],
  ['custody-retry', ok('funded'), null],
  ['custody-retry', ok('settled', 'passed', 'settled'), null],
  ['timeout', ok('funded'), 'refunded'],
  ['timeout', ok('delivered', 'failed'), 'refunded'],
  ['timeout', ok('disputed', 'failed'), 'resolved'],
  ['timeout', ok('created', 'none', 'unfunded'), null],
  ['timeout', ok('funded', 'none', 'settle-failed'), null],
  ['timeout', ok('settled', 'passed', 'settled'), null],
];

for (const [op, facts, expected] of ROWS) {
  const what = `${op} from ${facts.state} (verdict ${facts.verdict}, custody ${facts.custodyStatus})`;
  test(expected ? `${what} moves to ${expected}` : `${what} is 409 invalid_state`, () => {
    if (expected) assert.equal(transition(op, facts), expected);
    else
      assert.throws(
        () => transition(op, facts),
        (e: unknown) => e instanceof AppError && e.code === 'invalid_state' && e.status === 409 && e.message.length > 10,
      );
  });
}

test('every operation of the table has at least one row tested', () => {
  for (const op of Object.keys(TABLE))
    assert.ok(
      ROWS.some(([o]) => o === op),
      op,
    );
});
