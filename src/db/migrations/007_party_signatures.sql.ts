// Migration 007: the parties' signatures a closing relied on that no other row keeps (docs/protocol.md §11.4):
// dispute openings, evidence, ruling signatures and x402 authorizations, for the offline bundle.
export const name = '007_party_signatures';

export default /* sql */ `
CREATE TABLE party_signatures (
  seq         bigserial PRIMARY KEY,
  escrow_id   text NOT NULL REFERENCES escrows (id),
  kind        text NOT NULL CHECK (kind IN ('x402', 'dispute.open', 'dispute.evidence', 'ruling')),
  trail_index int,
  public_key  text NOT NULL,
  signed_body text NOT NULL,
  signature   text NOT NULL
);
CREATE INDEX party_signatures_escrow ON party_signatures (escrow_id, seq);
`;
