// Migration 013: a command's lock on its escrow and its read of everything it needs, in ONE statement
// (docs/statements.md; docs/design.md §3.1 for why they are two).
//
// The lock and the read must stay two statements on the server: under READ COMMITTED a statement
// that waited for a row lock re-reads only the locked row, and rows joined to it would come from the
// snapshot taken before the wait (a refund that waited behind a delivery saw no delivery). A
// VOLATILE SQL function takes a fresh snapshot for each statement in it, so lock_escrow locks, then
// reads with a snapshot that sees every commit made before the lock was granted, and the client
// sends one statement instead of two.
//
// escrow_locked is what the commands read about a locked escrow (src/escrow/escrowRow.ts lockedFrom);
// a sweep pass, which locks its escrows itself, reads the same view.
export const name = '013_escrow_lock';

export default /* sql */ `
CREATE VIEW escrow_locked AS
  SELECT e.id, e.state, e.payer, e.payee, e.arbiter, e.amount::text AS amount, e.asset, e.terms,
         e.terms_hash, e.timeouts, e.deadline_at, e.mandate_id, e.mandate_hash, e.custody_status, e.verdict,
         e.trail_length, e.trail_head, e.created_at, e.updated_at, e.metadata,
         svc_now() AS now, d.id AS delivery_id, d.content_hash AS delivery_hash,
         v.id AS verdict_id, ds.id AS dispute_id, ds.state AS dispute_state,
         c.attempts AS custody_attempts, c.closing AS custody_closing, c.status AS custody_journal_status,
         (SELECT key_id FROM service_keys WHERE purpose = 'issuer' AND valid_until IS NULL) AS issuer_key_id,
         EXISTS (SELECT 1 FROM custody_faults f WHERE f.id = 1 AND f.fail_next > 0) AS fault_pending
    FROM escrows e
    LEFT JOIN deliveries d ON d.escrow_id = e.id
    LEFT JOIN verdicts v ON v.escrow_id = e.id
    LEFT JOIN disputes ds ON ds.escrow_id = e.id
    LEFT JOIN custody c ON c.escrow_id = e.id;
-- Lock: FOR UPDATE on the escrow row (every command on one escrow serialises here); no row: no escrow.
CREATE FUNCTION lock_escrow(p_id text) RETURNS SETOF escrow_locked LANGUAGE sql VOLATILE AS
  'SELECT id FROM escrows WHERE id = p_id FOR UPDATE
   ;SELECT * FROM escrow_locked WHERE id = p_id';
`;
