// Migration 012: dead letters keep the key that owned their URL, and stored webhook URLs take the
// canonical form where SQL can compute it (docs/security.md "Webhook URL identity").
export const name = '012_webhook_fairness';

export default /* sql */ `
-- The key whose URL a delivery was dead-lettered for (NULL: root or the open sandbox), fixed when the
-- dead letter is made: it stays listed for that key after the URL is unregistered. Existing dead
-- letters take their URL's current owner; those of URLs no longer registered stay root's alone.
ALTER TABLE dead_letters ADD COLUMN owner_key text;
UPDATE dead_letters d SET owner_key = w.owner_key FROM webhooks w WHERE w.url = d.url;
CREATE INDEX dead_letters_owner ON dead_letters (owner_key, seq);

-- URLs registered before the canonical form lose a fragment and an empty query ("a?", "a#x" -> "a"),
-- in every table that names them, unless the canonical spelling is taken or two rows would share it
-- (such rows keep their spelling; DELETE /v1/webhooks also matches a stored spelling).
-- Percent-encoding case is left as stored: SQL has no URL parser to redo it safely.
CREATE TEMP TABLE webhook_canon ON COMMIT DROP AS
  SELECT url, regexp_replace(regexp_replace(url, '#.*$', ''), '[?]$', '') AS canon FROM webhooks;
DELETE FROM webhook_canon c WHERE c.canon = c.url
   OR EXISTS (SELECT 1 FROM webhooks w WHERE w.url = c.canon)
   OR (SELECT count(*) FROM webhook_canon c2 WHERE c2.canon = c.canon) > 1;
UPDATE outbox o SET url = c.canon FROM webhook_canon c WHERE o.url = c.url;
UPDATE dead_letters d SET url = c.canon FROM webhook_canon c WHERE d.url = c.url;
UPDATE webhook_attempts a SET url = c.canon FROM webhook_canon c WHERE a.url = c.url;
UPDATE webhooks w SET url = c.canon FROM webhook_canon c WHERE w.url = c.url;
`;
