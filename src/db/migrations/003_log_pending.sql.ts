// Migration 003: sequence → integrate (docs/design.md §4). A closing no longer takes the log's size row: it
// commits its proof with a pending leaf, and one integrator at a time (any instance) gives pending
// leaves their dense indices in batches. Plain SQL in a string so the bundle needs no files.
export const name = '003_log_pending';

export default /* sql */ `
-- Leaves committed by closings and not yet in the tree. seq only orders the integrator's batches
-- (a bigserial is never a lock: concurrent closings take values without waiting for each other);
-- the leaf's index is given at integration, in integration order. entry_id is the log's opaque name
-- for the entry (the proof id); the log itself knows nothing of what it names.
CREATE TABLE log_pending (
  seq       bigserial PRIMARY KEY,
  entry_id  text NOT NULL UNIQUE,
  leaf_hash text NOT NULL
);
-- A proof's leaf index is known only once its leaf is integrated.
ALTER TABLE proofs ALTER COLUMN leaf_index DROP NOT NULL;
`;
