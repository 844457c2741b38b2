// Migration 017: money after the verdict (docs/protocol.md §24): an escrow's fee, a
// delivery's claimed amount (partial capture), the refund window's deadline and the refunds after
// release, each a leaf of the log as an adjustment proof. Forward-only.
//
// A closing proof is still one per escrow (the partial unique index); adjustment proofs name the
// closing proof they adjust. escrow_locked gains the fee, the delivery's claim and the refund
// window's bounds (appended columns: lock_escrow returns the view's row, so it is created again with it).
export const name = '017_money';

export default /* sql */ `
ALTER TABLE escrows ADD COLUMN fee text;
ALTER TABLE escrows ADD COLUMN refund_deadline timestamptz;
-- refund_by: an absolute end the refund window may not pass (an x402 payer's bound refundDeadline).
ALTER TABLE escrows ADD COLUMN refund_by timestamptz;
ALTER TABLE escrows ADD COLUMN refunded numeric(38, 0) NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN amount numeric(38, 0);
ALTER TABLE custody ADD COLUMN fee_amount numeric(40, 0) NOT NULL DEFAULT 0;
ALTER TABLE custody ADD COLUMN fee_recipient text;

ALTER TABLE proofs ADD COLUMN adjusts text REFERENCES proofs (id);
ALTER TABLE proofs DROP CONSTRAINT proofs_escrow_id_key;
CREATE UNIQUE INDEX proofs_closing ON proofs (escrow_id) WHERE adjusts IS NULL;
CREATE INDEX proofs_adjusts ON proofs (adjusts) WHERE adjusts IS NOT NULL;

-- A refund after release: money back from the payee to the payer, signed by the payee or the arbiter.
-- (escrow_id, signer, signed_at, amount) is the act's identity: a repeat answers the first outcome.
CREATE TABLE refunds (
  id          text PRIMARY KEY,
  escrow_id   text NOT NULL REFERENCES escrows (id),
  amount      numeric(38, 0) NOT NULL,
  reason      text NOT NULL,
  signer      text NOT NULL,
  signed_at   text NOT NULL,
  signature   text NOT NULL,
  proof_id    text NOT NULL REFERENCES proofs (id),
  trail_index int NOT NULL,
  created_at  timestamptz NOT NULL,
  UNIQUE (escrow_id, signer, signed_at, amount)
);
-- A payer's request for a refund: recorded and announced, no money moves.
CREATE TABLE refund_requests (
  id          text PRIMARY KEY,
  escrow_id   text NOT NULL REFERENCES escrows (id),
  amount      numeric(38, 0) NOT NULL,
  reason      text NOT NULL,
  signer      text NOT NULL,
  signed_at   text NOT NULL,
  signature   text NOT NULL,
  trail_index int NOT NULL,
  created_at  timestamptz NOT NULL,
  UNIQUE (escrow_id, signer, signed_at, amount)
);

DROP FUNCTION lock_escrow(text);
CREATE OR REPLACE VIEW escrow_locked AS
  SELECT e.id, e.state, e.payer, e.payee, e.arbiter, e.amount::text AS amount, e.asset, e.terms,
         e.terms_hash, e.timeouts, e.deadline_at, e.mandate_id, e.mandate_hash, e.custody_status, e.verdict,
         e.trail_length, e.trail_head, e.created_at, e.updated_at, e.metadata,
         svc_now() AS now, d.id AS delivery_id, d.content_hash AS delivery_hash,
         v.id AS verdict_id, ds.id AS dispute_id, ds.state AS dispute_state,
         c.attempts AS custody_attempts, c.closing AS custody_closing, c.status AS custody_journal_status,
         (SELECT key_id FROM service_keys WHERE purpose = 'issuer' AND valid_until IS NULL) AS issuer_key_id,
         EXISTS (SELECT 1 FROM custody_faults f WHERE f.id = 1 AND f.fail_next > 0) AS fault_pending,
         e.fee, d.amount::text AS delivery_amount, e.refund_deadline, e.refunded::text AS refunded, e.refund_by
    FROM escrows e
    LEFT JOIN deliveries d ON d.escrow_id = e.id
    LEFT JOIN verdicts v ON v.escrow_id = e.id
    LEFT JOIN disputes ds ON ds.escrow_id = e.id
    LEFT JOIN custody c ON c.escrow_id = e.id;
CREATE FUNCTION lock_escrow(p_id text) RETURNS SETOF escrow_locked LANGUAGE sql VOLATILE AS
  'SELECT id FROM escrows WHERE id = p_id FOR UPDATE
   ;SELECT * FROM escrow_locked WHERE id = p_id';
`;
