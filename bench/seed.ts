// Bulk escrows written straight into a store (generate_series), shaped like the service's own rows:
// funded, two trail entries each (escrow.created, escrow.funded), a deadline in the past or future.
import type { Queryable } from '../src/db/types.ts';
import { DEFAULT_TIMEOUTS } from '../src/escrow/escrows.ts';
import { hex, TERMS } from './lifecycle.ts';

const PAYER = JSON.stringify({ publicKey: hex('a'), label: 'payer' });
const PAYEE = JSON.stringify({ publicKey: hex('b'), label: 'payee' });
const CREATED_BODY = JSON.stringify({
  escrow: {
    id: 'esc_00000000000000000000000000',
    state: 'created',
    payer: JSON.parse(PAYER),
    payee: JSON.parse(PAYEE),
    amount: '25.5',
    asset: 'USDC',
    terms: TERMS,
    timeouts: DEFAULT_TIMEOUTS,
    custody: { status: 'unfunded' },
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
  },
});

/**
 * Inserts `n` funded escrows with ids `<prefix><21-digit number>` (26 characters after `esc_`, like a
 * ULID). `deadline` 'past': all expired (the sweep's work); 'future': 30 days out (nothing to sweep).
 */
export async function seedFunded(q: Queryable, n: number, prefix: string, deadline: 'past' | 'future', chunk = 10_000): Promise<void> {
  const due = deadline === 'past' ? `now() - interval '1 hour' + i * interval '1 millisecond'` : `now() + interval '30 days'`;
  for (let from = 1; from <= n; from += chunk) {
    const to = Math.min(n, from + chunk - 1);
    await q.query(
      `INSERT INTO escrows (id, state, payer, payee, payer_key, payee_key, amount, asset, terms, terms_hash, timeouts, deadline_at,
                            custody_status, verdict, trail_length, trail_head, created_at, updated_at)
       SELECT $1 || lpad(i::text, 21, '0'), 'funded', $2, $3, $4, $5, 25500000, 'USDC', $6, $7, $8, ${due},
              'locked', 'none', 2, $9, now() - interval '2 hours', now() - interval '2 hours'
         FROM generate_series($10::int, $11::int) AS i`,
      [
        `esc_${prefix}`,
        PAYER,
        PAYEE,
        hex('a'),
        hex('b'),
        JSON.stringify(TERMS),
        hex('1'),
        JSON.stringify(DEFAULT_TIMEOUTS),
        hex('e'),
        from,
        to,
      ],
    );
    await q.query(
      `INSERT INTO trail_entries (escrow_id, idx, prev_hash, hash, at, event, body)
       SELECT $1 || lpad(i::text, 21, '0'), k, CASE k WHEN 0 THEN $2 ELSE $3 END, CASE k WHEN 0 THEN $3 ELSE $4 END,
              '2025-01-01T00:00:00.000Z', CASE k WHEN 0 THEN 'escrow.created' ELSE 'escrow.funded' END,
              CASE k WHEN 0 THEN $5 ELSE '{"deadlineAt":"2025-01-02T00:00:00.000Z"}' END
         FROM generate_series($6::int, $7::int) AS i CROSS JOIN generate_series(0, 1) AS k`,
      [`esc_${prefix}`, '0'.repeat(64), hex('d'), hex('e'), CREATED_BODY, from, to],
    );
  }
}
