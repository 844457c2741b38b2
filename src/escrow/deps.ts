// A command's transaction options under group commit; what a command takes is CommandDeps (src/commandDeps.ts).
import type { TxOptions } from '../db/types.ts';
import type { CommandDeps } from '../commandDeps.ts';

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
