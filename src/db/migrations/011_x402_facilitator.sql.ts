// Migration 011: x402 facilitator payments (docs/x402.md). A collect creates one escrow per
// (payTo, nonce): the primary key makes that true even for concurrent or retried collects, and the
// row commits in the transaction that creates the escrow, so a collect either left both or neither.
export const name = '011_x402_facilitator';

export default /* sql */ `
CREATE TABLE x402_payments (
  pay_to        text NOT NULL,
  nonce         text NOT NULL,
  -- sha256 of JCS {authorization, signature, requirements}: a used nonce with another payload is refused.
  payload_hash  text NOT NULL,
  escrow_id     text NOT NULL UNIQUE REFERENCES escrows (id),
  payer         text NOT NULL,
  network       text NOT NULL,
  amount        text NOT NULL,
  created_at    timestamptz NOT NULL,
  PRIMARY KEY (pay_to, nonce)
);
`;
