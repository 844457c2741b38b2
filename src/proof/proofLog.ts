// The settlement proofs' transparency log: the generic log (src/tlog/) run with the issuer key as
// its head signer and proofs.leaf_index as the place its indices are recorded.
import type { Db, Stmt } from '../db/types.ts';
import { createIntegrator, type LogIntegrator } from '../tlog/integrator.ts';
import type { Integrated } from '../tlog/integrate.ts';
import { issuerHeadKeys } from './keys.ts';
import { OPEN_GATE, type AppendGate } from '../tlog/gate.ts';

/** Leaves per integration batch: large enough that a 10k sweep integrates in a few dozen batches. */
export const INTEGRATE_BATCH = 1000;

export interface ProofLog extends LogIntegrator {
  /** Where the integrator reports a failed batch (the jobs set it to the operator log). */
  onError: (err: unknown) => void;
  /** Whether the log may grow now (src/tlog/gate.ts): closings ask before they write their leaf. */
  gate: AppendGate;
}

/** The integrator's own statement: the proofs it integrated learn their leaf index. */
export function recordIndices(done: Integrated[]): Stmt[] {
  return [
    {
      text: `UPDATE proofs p SET leaf_index = x.idx FROM json_to_recordset($1::text::json) AS x(id text, idx bigint) WHERE p.id = x.id`,
      params: [JSON.stringify(done.map((d) => ({ id: d.entryId, idx: d.index })))],
    },
  ];
}

export function createProofLog(db: Db, opts: { waitMs: number; gate?: AppendGate }): ProofLog {
  const gate = opts.gate ?? OPEN_GATE;
  const log: ProofLog = {
    ...createIntegrator(db, {
      keys: issuerHeadKeys,
      max: INTEGRATE_BATCH,
      waitMs: opts.waitMs,
      indexed: recordIndices,
      onError: (err) => log.onError(err),
      mayAppend: () => gate.mayAppend(),
    }),
    onError: () => {},
    gate,
  };
  return log;
}
