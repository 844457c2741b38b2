// Migration 016: an AP2 transaction_id is unique under its open mandate (docs/ap2.md §3), not across
// the whole service: a unique index over every tenant's ids let one tenant block another's id and learn
// that it had been used. A payment under one mandate is still made once.
export const name = '016_ap2_transaction_scope';

export default /* sql */ `
ALTER TABLE ap2_escrows DROP CONSTRAINT ap2_escrows_transaction_id_key;
CREATE UNIQUE INDEX ap2_escrows_mandate_transaction ON ap2_escrows (budget_key, transaction_id);
`;
