// Migration 002: chain custody (CUSTODY=chain). Plain SQL in a string so the bundle needs no files.
export const name = '002_chain';

export default /* sql */ `
-- The escrow contract of this deployment, one per chain (CAIP-2 id, e.g. eip155:31337): deployed
-- once by the first instance that starts with CUSTODY=chain, then used by every instance.
CREATE TABLE chain_contracts (
  chain         text PRIMARY KEY,
  address       text NOT NULL,
  operator      text NOT NULL,
  deploy_tx     text NOT NULL,
  source_sha256 text NOT NULL,
  deployed_at   timestamptz NOT NULL DEFAULT now()
);
`;
