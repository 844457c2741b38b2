// Migration 009: webhook registrations remember the minted key that made them (tenancy,
// docs/protocol.md §14.4), so a key's URL receives only the events of escrows that key sees.
export const name = '009_webhook_tenancy';

export default /* sql */ `
-- owner_key: the minted key that registered the URL; null for the root key and the open sandbox
-- (those registrations receive every escrow's events, as before). A URL has one owner: another
-- caller registering it is refused (src/webhooks/registry.ts).
ALTER TABLE webhooks ADD COLUMN owner_key text;
-- A key's registrations in registration order (GET /v1/webhooks for a minted key).
CREATE INDEX webhooks_owner ON webhooks (owner_key, seq);
`;
