// Migration 006: keyset pagination for every list, escrow filters, escrow metadata (docs/protocol.md §9.2, §9.3, §3.5).
// Its text is fixed (test/db/migrations.test.ts holds its sha256).
export const name = '006_lists';

/**
 * A monotonic `seq` column on `table` to page by, backed by its own sequence: existing rows (`alias`
 * in the UPDATE) are numbered by (created_at, `key`), so no page changes order, and new rows follow.
 */
const seqColumn = (table: string, alias: string, key: string) => `ALTER TABLE ${table} ADD COLUMN seq bigint;
UPDATE ${table} ${alias} SET seq = o.n FROM (SELECT ${key}, row_number() OVER (ORDER BY created_at, ${key}) AS n FROM ${table}) o WHERE ${alias}.${key} = o.${key};
CREATE SEQUENCE ${table}_seq_seq OWNED BY ${table}.seq;
SELECT setval('${table}_seq_seq', COALESCE((SELECT max(seq) FROM ${table}), 0) + 1, false);
ALTER TABLE ${table} ALTER COLUMN seq SET DEFAULT nextval('${table}_seq_seq');
ALTER TABLE ${table} ALTER COLUMN seq SET NOT NULL;
CREATE UNIQUE INDEX ${table}_seq ON ${table} (seq);`;

export default /* sql */ `
-- Escrow metadata (Stripe-style: at most 50 keys, key <= 40 chars, value <= 500 chars; checked in
-- src/escrow/metadata.ts). JSON text; NULL when the escrow has none. Not part of proofs or the trail.
ALTER TABLE escrows ADD COLUMN metadata text;

-- GET /v1/escrows?agentId=: the party filter pages by seq within one key.
CREATE INDEX escrows_payer_key_seq ON escrows (payer_key, seq);
CREATE INDEX escrows_payee_key_seq ON escrows (payee_key, seq);

-- Webhook registrations and minted keys get a monotonic key to page by. Existing rows are numbered
-- in the order the lists showed them (created_at, then url / id), so no page changes order.
${seqColumn('webhooks', 'w', 'url')}

${seqColumn('api_keys', 'k', 'id')}
`;
