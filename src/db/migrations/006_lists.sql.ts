// Migration 006: keyset pagination for every list, escrow filters, escrow metadata (docs/protocol.md §9.2, §9.3, §3.5).
export default /* sql */ `
-- Escrow metadata (Stripe-style: at most 50 keys, key <= 40 chars, value <= 500 chars; checked in
-- src/escrow/metadata.ts). JSON text; NULL when the escrow has none. Not part of proofs or the trail.
ALTER TABLE escrows ADD COLUMN metadata text;

-- GET /v1/escrows?agentId=: the party filter pages by seq within one key.
CREATE INDEX escrows_payer_key_seq ON escrows (payer_key, seq);
CREATE INDEX escrows_payee_key_seq ON escrows (payee_key, seq);

-- Webhook registrations and minted keys get a monotonic key to page by. Existing rows are numbered
-- in the order the lists showed them (created_at, then url / id), so no page changes order.
ALTER TABLE webhooks ADD COLUMN seq bigint;
UPDATE webhooks w SET seq = o.n FROM (SELECT url, row_number() OVER (ORDER BY created_at, url) AS n FROM webhooks) o WHERE w.url = o.url;
CREATE SEQUENCE webhooks_seq_seq OWNED BY webhooks.seq;
SELECT setval('webhooks_seq_seq', COALESCE((SELECT max(seq) FROM webhooks), 0) + 1, false);
ALTER TABLE webhooks ALTER COLUMN seq SET DEFAULT nextval('webhooks_seq_seq');
ALTER TABLE webhooks ALTER COLUMN seq SET NOT NULL;
CREATE UNIQUE INDEX webhooks_seq ON webhooks (seq);

ALTER TABLE api_keys ADD COLUMN seq bigint;
UPDATE api_keys k SET seq = o.n FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM api_keys) o WHERE k.id = o.id;
CREATE SEQUENCE api_keys_seq_seq OWNED BY api_keys.seq;
SELECT setval('api_keys_seq_seq', COALESCE((SELECT max(seq) FROM api_keys), 0) + 1, false);
ALTER TABLE api_keys ALTER COLUMN seq SET DEFAULT nextval('api_keys_seq_seq');
ALTER TABLE api_keys ALTER COLUMN seq SET NOT NULL;
CREATE UNIQUE INDEX api_keys_seq ON api_keys (seq);
`;
