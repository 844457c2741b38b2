// Escrow timeouts as the requirements' extra.timeouts carries them (the service's x402 documentation).
export interface Timeouts {
  deliverWithinSeconds?: number;
  resolveWithinSeconds?: number;
  decideWithinSeconds?: number;
  timeoutRuling?: 'release' | 'refund' | 'split';
}
