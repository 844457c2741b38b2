// Escrow timeouts as the requirements' extra.timeouts carries them (the service's docs/x402.md).
export interface Timeouts {
  deliverWithinSeconds?: number;
  resolveWithinSeconds?: number;
  decideWithinSeconds?: number;
  timeoutRuling?: 'release' | 'refund' | 'split';
}
