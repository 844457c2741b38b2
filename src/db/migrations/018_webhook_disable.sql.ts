// Migration 018: endpoints that fail every attempt for WEBHOOK_DISABLE_AFTER_HOURS are disabled until
// their owner enables them again, and the owner's other endpoints are told so by a `webhook.disabled`
// notice (docs/protocol.md §14.5).
export const name = '018_webhook_disable';

export default /* sql */ `
-- failing_since: the database clock (svc_now()) at the first failed attempt since the endpoint's last
-- success, NULL while its last attempt succeeded. disabled_at / disabled_reason: set when it is
-- disabled, cleared when its owner enables it again.
ALTER TABLE webhooks ADD COLUMN failing_since timestamptz;
ALTER TABLE webhooks ADD COLUMN disabled_at timestamptz;
ALTER TABLE webhooks ADD COLUMN disabled_reason text;

-- Events about endpoints rather than escrows (webhook.disabled): delivered through the outbox like
-- an escrow's events, their outbox rows naming the notice's id (whn_…) with idx 0 where an escrow's
-- rows name its id and trail position. owner_key: the key whose endpoints it is for (NULL: root and
-- the open sandbox).
CREATE TABLE webhook_notices (
  id         text PRIMARY KEY,
  owner_key  text,
  event      text NOT NULL,
  at         text NOT NULL,
  body       text NOT NULL
);
CREATE INDEX webhook_notices_owner ON webhook_notices (owner_key);
-- An outbox row names a trail entry or a notice now, so the foreign key to trail_entries goes; every
-- writer of escrow rows (the trail's fan-out and redelivery of a dead letter) takes them from a trail
-- entry or from an outbox row that did.
ALTER TABLE outbox DROP CONSTRAINT outbox_escrow_id_idx_fkey;
`;
