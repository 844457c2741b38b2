// Migration 014: the service's private keys leave the database (docs/keys.md). service_keys keeps
// each key's public half, its era and the source that names it (`file:…`, `pkcs11:…`; NULL for a key
// held in memory). Stored secrets of an earlier version stay until a start proves the same keys are
// configured elsewhere and erases them (src/proof/keyEras.ts): a migration never erases a key.
export const name = '014_keys_outside';

export default /* sql */ `
ALTER TABLE service_keys ADD COLUMN source text;
ALTER TABLE service_keys ALTER COLUMN secret_key DROP NOT NULL;
-- No new row may carry a secret; rows of an earlier version keep theirs until the start erases them.
ALTER TABLE service_keys ADD CONSTRAINT service_keys_no_secret CHECK (secret_key IS NULL) NOT VALID;

-- The x402 demo payee is a party the service acts for, like a sandbox agent, not a key the service
-- signs proofs, heads or webhooks with: its key moves to the table of held party keys.
CREATE TABLE held_party_keys (
  name        text PRIMARY KEY,
  public_key  text NOT NULL,
  secret_key  text NOT NULL,
  created_at  timestamptz NOT NULL
);
INSERT INTO held_party_keys (name, public_key, secret_key, created_at)
  SELECT 'x402-payee', public_key, secret_key, valid_from FROM service_keys WHERE purpose = 'x402-payee' AND valid_until IS NULL;
DELETE FROM service_keys WHERE purpose = 'x402-payee';
`;
