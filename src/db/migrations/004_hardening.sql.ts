// Migration 004: tenancy of minted keys, replay of client-signed actions, and the revocation
// generation that lets authentication be cached (docs/protocol.md §18.3, §6.4; docs/design.md §5). Plain SQL in a string (no files at run time).
export const name = '004_hardening';

export default /* sql */ `
-- Which minted key registered an agent (NULL: the root key or the open sandbox). A minted key acts
-- only on its own agents (docs/protocol.md §18.3).
ALTER TABLE agents ADD COLUMN owner_key text;

-- The minted keys that may see an escrow: its creator, and the owner of any agent that is one of its
-- parties. Keyed (key_id, seq) so a key's list pages in creation order by the primary key alone.
CREATE TABLE escrow_tenants (
  key_id    text NOT NULL,
  seq       bigint NOT NULL,
  escrow_id text NOT NULL REFERENCES escrows (id),
  PRIMARY KEY (key_id, seq)
);
CREATE UNIQUE INDEX escrow_tenants_escrow ON escrow_tenants (escrow_id, key_id);

-- The minted keys that registered a mandate (registration is idempotent by content hash, so a
-- mandate the principal handed to two keys is visible to both; its usage is the principal's).
CREATE TABLE mandate_tenants (
  key_id     text NOT NULL,
  mandate_id text NOT NULL REFERENCES mandates (id),
  PRIMARY KEY (key_id, mandate_id)
);

-- Client-signed dispute actions already accepted, by sha256 of (signer, signed bytes): a signed
-- action counts once (docs/protocol.md §6.4). Written in the action's own transaction.
CREATE TABLE signed_actions (
  action_hash text PRIMARY KEY,
  escrow_id   text NOT NULL REFERENCES escrows (id),
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Bumped in the same transaction as every revocation. Each instance reads it in the statement that
-- spends the rate budget, so a cached authentication is dropped on the next request anywhere.
CREATE TABLE api_key_generation (
  id  int PRIMARY KEY CHECK (id = 1),
  gen bigint NOT NULL DEFAULT 0
);
INSERT INTO api_key_generation (id, gen) VALUES (1, 0);
`;
