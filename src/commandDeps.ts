// What a domain command needs from the app that runs it: the store, the custody rails and the proof
// log. Passed as an argument (never a module singleton); nothing of HTTP, rate limits or the request log.
// It sits below the aggregates that take it (docs/design.md §2.2).
import type { Db } from './db/types.ts';
import type { CustodyAdapter } from './custody/simulated.ts';
import type { ProofLog } from './proof/proofLog.ts';

export interface CommandDeps {
  db: Db;
  custody: CustodyAdapter;
  /** The settlement proofs' transparency log (src/proof/proofLog.ts): closings sequence their leaf into it. */
  proofLog: ProofLog;
}
