// What a domain command needs from the app that runs it: the store, the custody rails and the proof
// log. Passed as an argument (never a module singleton); nothing of HTTP, rate limits or the request log.
import type { Db, TxOptions } from '../db/types.ts';
import type { CustodyAdapter } from '../custody/simulated.ts';
import type { ProofLog } from '../proof/proofLog.ts';

export interface CommandDeps {
  db: Db;
  custody: CustodyAdapter;
  /** The settlement proofs' transparency log (src/proof/proofLog.ts): closings sequence their leaf into it. */
  proofLog: ProofLog;
}

/**
 * A command's transaction options: with group commit on, it may share its transaction with other
 * commands (src/db/groupCommit.ts) that name none of its keys: the escrow it locks (`escrow:<id>`), its
 * idempotency scope (`idem:<scope>`, claimed by a lock that one session holds only once), any other
 * row it reads to decide. Only over simulated custody: a member that calls out to a chain would hold
 * the whole group's COMMIT for as long, and a group that fails runs its members again.
 */
export function commandTx(svc: CommandDeps, keys: Array<string | undefined>): TxOptions {
  if (svc.custody.kind !== 'simulated') return {};
  return { group: keys.filter((k): k is string => k !== undefined) };
}
