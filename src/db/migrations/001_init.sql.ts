// Migration 001: the whole initial schema. Plain SQL in a string so the bundle needs no files.
// Its text is fixed (test/db/migrations.test.ts holds its sha256).
export const name = '001_init';

/** A table of one row (id 1) holding one number that starts at 0, created with its row. */
const oneRow = (table: string, column: string, type: string) => `CREATE TABLE ${table} (
  ${'id'.padEnd(column.length)} int PRIMARY KEY CHECK (id = 1),
  ${column} ${type} NOT NULL DEFAULT 0
);
INSERT INTO ${table} (id, ${column}) VALUES (1, 0);`;

export default /* sql */ `
-- Keys the service holds: the issuer key (rotates; eras stay), the webhook signing key, and the
-- x402 demo payee key (docs/protocol.md §15.3: the payee that delivers the paid resource).
CREATE TABLE service_keys (
  key_id      text PRIMARY KEY,
  purpose     text NOT NULL CHECK (purpose IN ('issuer', 'webhook', 'x402-payee')),
  public_key  text NOT NULL,
  secret_key  text NOT NULL,
  valid_from  timestamptz NOT NULL,
  valid_until timestamptz,
  seq         bigserial NOT NULL UNIQUE
);
-- At most one active key per purpose: two instances generating at first start cannot both win.
CREATE UNIQUE INDEX service_keys_one_active ON service_keys (purpose) WHERE valid_until IS NULL;

-- The sandbox clock (docs/protocol.md §9.4): an offset added to the database clock. Deadlines compare
-- with svc_now(), never with Node's clock.
${oneRow('clock', 'offset_ms', 'bigint')}
CREATE FUNCTION svc_now() RETURNS timestamptz LANGUAGE sql STABLE AS
  'SELECT date_trunc(''milliseconds'', now() + (SELECT offset_ms FROM clock WHERE id = 1) * interval ''1 millisecond'')';

CREATE TABLE agents (
  id          text PRIMARY KEY,
  label       text,
  public_key  text NOT NULL,
  secret_key  text NOT NULL,
  created_at  timestamptz NOT NULL
);
CREATE INDEX agents_public_key ON agents (public_key);

CREATE TABLE mandates (
  id          text PRIMARY KEY,
  hash        text NOT NULL UNIQUE,
  principal   text NOT NULL,
  caps        text NOT NULL,
  signature   text NOT NULL,
  spent       numeric(40, 0) NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL
);

CREATE TABLE escrows (
  seq            bigserial NOT NULL UNIQUE,
  id             text PRIMARY KEY,
  state          text NOT NULL,
  payer          text NOT NULL,
  payee          text NOT NULL,
  arbiter        text,
  payer_key      text NOT NULL,
  payee_key      text NOT NULL,
  arbiter_key    text,
  amount         numeric(40, 0) NOT NULL,
  asset          text NOT NULL,
  terms          text NOT NULL,
  terms_hash     text NOT NULL,
  timeouts       text NOT NULL,
  deadline_at    timestamptz,
  mandate_id     text REFERENCES mandates (id),
  mandate_hash   text,
  custody_status text NOT NULL,
  verdict        text NOT NULL DEFAULT 'none',
  trail_length   int NOT NULL DEFAULT 0,
  trail_head     text NOT NULL,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL
);
CREATE INDEX escrows_state_seq ON escrows (state, seq);
-- The sweep's index: only rows that have a deadline.
CREATE INDEX escrows_deadline ON escrows (deadline_at) WHERE deadline_at IS NOT NULL;
CREATE INDEX escrows_mandate ON escrows (mandate_id) WHERE mandate_id IS NOT NULL;

CREATE TABLE trail_entries (
  escrow_id  text NOT NULL REFERENCES escrows (id),
  idx        int NOT NULL,
  prev_hash  text NOT NULL,
  hash       text NOT NULL,
  at         text NOT NULL,
  event      text NOT NULL,
  body       text NOT NULL,
  PRIMARY KEY (escrow_id, idx)
);

CREATE TABLE deliveries (
  id           text PRIMARY KEY,
  escrow_id    text NOT NULL UNIQUE REFERENCES escrows (id),
  content_hash text NOT NULL,
  payload      text NOT NULL,
  size_bytes   int NOT NULL,
  submitted_at text NOT NULL,
  signature    text NOT NULL
);

CREATE TABLE verdicts (
  id          text PRIMARY KEY,
  escrow_id   text NOT NULL UNIQUE REFERENCES escrows (id),
  delivery_id text NOT NULL REFERENCES deliveries (id),
  passed      boolean NOT NULL,
  results     text NOT NULL,
  decided_at  text NOT NULL
);

CREATE TABLE disputes (
  id          text PRIMARY KEY,
  escrow_id   text NOT NULL UNIQUE REFERENCES escrows (id),
  state       text NOT NULL,
  opened_by   text NOT NULL,
  reason      text NOT NULL,
  evidence    text NOT NULL DEFAULT '[]',
  ruling      text,
  opened_at   text NOT NULL
);

-- Custody journal: one entry per escrow once a settlement has been attempted.
CREATE TABLE custody (
  escrow_id    text PRIMARY KEY REFERENCES escrows (id),
  status       text NOT NULL,
  outcome      text NOT NULL,
  payer_amount numeric(40, 0) NOT NULL,
  payee_amount numeric(40, 0) NOT NULL,
  attempts     int NOT NULL DEFAULT 0,
  last_error   text,
  reference    text NOT NULL,
  closing      text NOT NULL,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
${oneRow('custody_faults', 'fail_next', 'int')}

CREATE TABLE proofs (
  id          text PRIMARY KEY,
  escrow_id   text NOT NULL UNIQUE REFERENCES escrows (id),
  leaf_index  bigint NOT NULL UNIQUE,
  leaf_hash   text NOT NULL,
  doc         text NOT NULL,
  issued_at   timestamptz NOT NULL
);

-- Transparency log (generic): the size row is the sequencer, nodes are complete subtrees.
${oneRow('log_state', 'size', 'bigint')}
CREATE TABLE log_nodes (
  level smallint NOT NULL,
  idx   bigint NOT NULL,
  hash  text NOT NULL,
  PRIMARY KEY (level, idx)
);
CREATE TABLE log_heads (
  size       bigint NOT NULL,
  key_id     text NOT NULL,
  root_hash  text NOT NULL,
  signed_at  text NOT NULL,
  signature  text NOT NULL,
  PRIMARY KEY (size, key_id)
);

CREATE TABLE idempotency (
  scope        text PRIMARY KEY,
  request_hash text NOT NULL,
  status       int,
  body         text,
  headers      text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_created ON idempotency (created_at);

CREATE TABLE webhooks (
  url        text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- Outbox: one row per event per registered URL, written in the state change's transaction.
CREATE TABLE outbox (
  id               bigserial PRIMARY KEY,
  escrow_id        text NOT NULL,
  idx              int NOT NULL,
  url              text NOT NULL,
  attempts         int NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  first_attempt_at timestamptz,
  last_error       text,
  last_status      int,
  FOREIGN KEY (escrow_id, idx) REFERENCES trail_entries (escrow_id, idx)
);
-- The sender's index: per URL, its oldest row is the only one eligible (per-URL order), found by
-- a loose index scan over (url, id) whatever the backlog (src/webhooks/outbox.ts).
CREATE INDEX outbox_url_id ON outbox (url, id);
-- Each event's x-proof signature, made once for every URL and attempt, with the key that made it.
CREATE TABLE event_signatures (
  escrow_id  text NOT NULL,
  idx        int NOT NULL,
  signature  text NOT NULL,
  public_key text NOT NULL,
  PRIMARY KEY (escrow_id, idx)
);
CREATE TABLE dead_letters (
  id               text PRIMARY KEY,
  escrow_id        text NOT NULL,
  idx              int NOT NULL,
  url              text NOT NULL,
  attempts         int NOT NULL,
  last_error       text NOT NULL,
  last_status      int,
  first_attempt_at timestamptz NOT NULL,
  dead_at          timestamptz NOT NULL,
  seq              bigserial NOT NULL UNIQUE
);
CREATE TABLE webhook_counters (
  id            int PRIMARY KEY CHECK (id = 1),
  delivered     bigint NOT NULL DEFAULT 0,
  failed        bigint NOT NULL DEFAULT 0,
  dead_lettered bigint NOT NULL DEFAULT 0
);
INSERT INTO webhook_counters (id) VALUES (1);

CREATE TABLE api_keys (
  id             text PRIMARY KEY,
  label          text,
  secret_hash    text NOT NULL UNIQUE,
  rate_limit_max int,
  created_at     timestamptz NOT NULL,
  revoked_at     timestamptz
);

-- Shared fixed-window rate counters (docs/protocol.md §18.4): one row per budget unit per window, so every
-- instance counts against the same budget. Keyed window first: the upsert, the per-window read of
-- GET /v1/admin/rate and the deletion of past windows all use the primary key.
CREATE UNLOGGED TABLE rate_counters (
  window_idx bigint NOT NULL,
  unit       text NOT NULL,
  hits       int NOT NULL,
  PRIMARY KEY (window_idx, unit)
);

-- x402 nonces that settled (docs/protocol.md §15.3): the primary key makes a nonce settle once, even under
-- concurrent replays; the row commits with the escrow it paid for.
CREATE TABLE x402_nonces (
  nonce      text PRIMARY KEY,
  escrow_id  text,
  created_at timestamptz NOT NULL DEFAULT now()
);
`;
