// Migration 010: witnessing (docs/witnessing.md). The checkpoints the log submitted to witnesses,
// the cosignatures it verified and kept, and each witness's submission state, whose next_at is
// also the claim that keeps other instances off a witness while one submits to it.
export const name = '010_witness';

export default /* sql */ `
-- The issuer-signed checkpoint note of each size submitted to a witness (the text witnesses cosign).
CREATE TABLE witness_checkpoints (
  size       bigint PRIMARY KEY,
  note       text NOT NULL
);
-- One verified cosignature line per (size, witness); a witness's lines are kept only after they
-- verify (cosignature/v1 over that size's checkpoint text).
CREATE TABLE witness_cosignatures (
  size       bigint NOT NULL REFERENCES witness_checkpoints (size),
  vkey       text NOT NULL,
  line       text NOT NULL,
  cosigned_at bigint NOT NULL,
  PRIMARY KEY (size, vkey)
);
-- Newest cosigned sizes first for the quorum lookup.
CREATE INDEX witness_cosignatures_vkey ON witness_cosignatures (vkey, size DESC);
-- Per witness: the size it told us it has (the next "old"), the size it last cosigned, and when it
-- may be sent to next (after a backoff, or once the instance that claimed it is done or gone).
CREATE TABLE witness_state (
  vkey          text PRIMARY KEY,
  witness_size  bigint NOT NULL DEFAULT 0,
  cosigned_size bigint,
  failures      int NOT NULL DEFAULT 0,
  next_at       timestamptz NOT NULL DEFAULT now(),
  last_error    text,
  last_error_at timestamptz,
  cosigned_at   timestamptz
);
`;
