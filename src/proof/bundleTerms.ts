// The verdict's side of an offline bundle: the escrow's terms, and on request the delivery's payload,
// so an auditor can re-run every check of the terms (docs/protocol.md §11.5).
import type { Queryable } from '../db/types.ts';
import type { Bundle } from '@escrow-settlement/protocol/types';

/**
 * `terms` always; `disclosed: {payload, submittedAt}` when `disclose` is set and a delivery was made.
 * The payload is stored as its JCS text, so parsing it gives back the value whose hash the trail records.
 */
export async function bundleTerms(q: Queryable, escrowId: string, disclose: boolean): Promise<Pick<Bundle, 'terms' | 'disclosed'>> {
  const [row] = await q.query<{ terms: string; payload: string | null; submitted_at: string | null }>(
    disclose
      ? 'SELECT e.terms, d.payload, d.submitted_at FROM escrows e LEFT JOIN deliveries d ON d.escrow_id = e.id WHERE e.id = $1'
      : 'SELECT e.terms, NULL AS payload, NULL AS submitted_at FROM escrows e WHERE e.id = $1',
    [escrowId],
  );
  return {
    terms: JSON.parse(row.terms),
    ...(row.payload !== null && row.submitted_at !== null
      ? { disclosed: { payload: JSON.parse(row.payload), submittedAt: row.submitted_at } }
      : {}),
  };
}
