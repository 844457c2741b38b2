// Migration 005: concurrent webhook delivery (per-row leases) and Standard Webhooks secrets.
export const name = '005_webhooks';

export default /* sql */ `
-- A claimed outbox row is leased: lease_until is when its claim runs out (a crashed sender's rows are
-- due again then) and lease_owner the sender that holds it. A row waiting for a retry has no lease.
-- Rows leased by one sender keep other senders off that URL, so the per-URL in-flight cap holds across
-- instances (src/webhooks/outbox.ts).
ALTER TABLE outbox ADD COLUMN lease_until timestamptz;
ALTER TABLE outbox ADD COLUMN lease_owner text;
-- Due rows of one URL, oldest due first, without walking a dead receiver's retry backlog.
CREATE INDEX outbox_url_due ON outbox (url, next_attempt_at, id);
-- (url, next_attempt_at, id) also serves the loose scan over URLs, so the old (url, id) index goes.
DROP INDEX outbox_url_id;
-- Live leases of one URL: few rows, so a small partial index.
CREATE INDEX outbox_leased ON outbox (url, lease_owner) WHERE lease_until IS NOT NULL;

-- Standard Webhooks: each endpoint's symmetric secret (the base64 of 32 random bytes; the API shows it
-- as whsec_<base64>). secret_revealed: whether a registration answer has shown it. Endpoints that
-- existed before this migration get a secret here, from gen_random_uuid() (the server's strong random
-- source, 2 x 122 bits hashed to 32 bytes), not yet revealed: the next POST /v1/webhooks of the URL
-- shows it once (docs/protocol.md §14.1).
ALTER TABLE webhooks ADD COLUMN secret text;
ALTER TABLE webhooks ADD COLUMN secret_revealed boolean NOT NULL DEFAULT false;
UPDATE webhooks SET secret = encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'base64');
ALTER TABLE webhooks ALTER COLUMN secret SET NOT NULL;
`;
