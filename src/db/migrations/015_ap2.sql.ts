// Migration 015: AP2 Payment Mandates as the authority for an escrow (docs/ap2.md §5). Challenges are
// single-use nonces; a mandate's budget and recurrence live in one row per open mandate, locked by
// every escrow creation under it, so concurrent creations never overspend it; a transaction_id is
// accepted once (its unique index); each AP2 escrow keeps the chain it was created under, for its bundle.
export const name = '015_ap2';

export default /* sql */ `
CREATE TABLE ap2_challenges (
  nonce       text PRIMARY KEY,
  audience    text NOT NULL,
  -- The minted key it was issued to; NULL for the root key and the open sandbox.
  scope       text,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX ap2_challenges_expiry ON ap2_challenges (expires_at);
-- One row per open mandate, keyed by sha256 hex of its issuer-signed JWT (signature in low-S form).
CREATE TABLE ap2_mandates (
  budget_key   text PRIMARY KEY,
  -- Micro-units of the asset accepted under the mandate, what closings returned to the payer given back.
  spent        numeric(38, 0) NOT NULL DEFAULT 0,
  occurrences  integer NOT NULL DEFAULT 0,
  last_at      timestamptz
);
CREATE TABLE ap2_escrows (
  -- Written before the escrow in its transaction (it claims the transaction_id): checked at commit.
  escrow_id       text PRIMARY KEY REFERENCES escrows (id) DEFERRABLE INITIALLY DEFERRED,
  transaction_id  text NOT NULL UNIQUE,
  budget_key      text NOT NULL REFERENCES ap2_mandates (budget_key),
  open_hash       text NOT NULL,
  closed_hash     text NOT NULL,
  -- The receipt's reference: base64url sha256 of the presented closed token.
  closed_sd_hash  text NOT NULL,
  chain           text NOT NULL,
  checkout        text
);
`;
