// Migration 008: one row per webhook attempt, so the console (and GET /v1/webhooks/attempts) can show
// every attempt with its status and timing, not only the outbox's latest state.
export const name = '008_webhook_attempts';

export default /* sql */ `
CREATE TABLE webhook_attempts (
  id          bigserial PRIMARY KEY,
  escrow_id   text NOT NULL,
  idx         int NOT NULL,
  url         text NOT NULL,
  attempt     int NOT NULL,
  status      int,
  error       text,
  duration_ms int NOT NULL,
  outcome     text NOT NULL CHECK (outcome IN ('delivered', 'retry', 'dead')),
  at          timestamptz NOT NULL
);
-- One escrow's attempts (the escrow page), newest first by id.
CREATE INDEX webhook_attempts_escrow ON webhook_attempts (escrow_id, id);
`;
