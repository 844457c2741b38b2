// Two known postgres.js 3.4.9 defects that end the whole process during a database outage.
//
// The first (porsager/postgres#1066, #1154, #1208; unmerged fixes #1168, #1176): a small write
// deferred with setImmediate can run after its connection's socket is gone, and `socket.write` on
// null throws from the timer, where no caller can catch it. By then the connection is already
// closed and its queries were rejected with CONNECTION_CLOSED, so dropping the write is what the
// upstream fix does. This guard swallows exactly that TypeError (logged once per occurrence) and
// lets everything else crash as Node would. Remove both guards when postgres.js ships the fixes.
//
// The second (porsager/postgres#1192, #1205, #1223): the array-types query every new connection
// sends first runs in a promise postgres.js discards, so a connection lost, ended or terminated
// during it rejects with no handler, and Node makes that an uncaught exception. The rejection is
// dropped (logged); any other unhandled rejection still ends the process as Node's default does.
import { isDriverTypeFetchFailure } from '../db/errors.ts';

type Log = (msg: string, fields?: Record<string, unknown>) => void;

/** True for the TypeError postgres.js throws from its deferred write on a closed connection. */
export function isPostgresNullSocketWrite(err: unknown): boolean {
  if (!(err instanceof TypeError)) return false;
  if (!/^Cannot read properties of null \(reading 'write'\)$/.test(err.message)) return false;
  // The throwing frame: nextWrite, called from the immediate (in the bundle the path is dist/, the name survives).
  const frames = (err.stack ?? '').split('\n').filter((l) => l.trim().startsWith('at '));
  return /\bnextWrite\b/.test(frames[0] ?? '') && (frames[0].includes('postgres') || frames[0].includes('escrow-settlement'));
}

export function installPostgresGuard(log: Log): void {
  process.on('uncaughtException', (err, origin) => {
    if (isPostgresNullSocketWrite(err)) {
      log('postgres.js wrote to a connection already closed (porsager/postgres#1154); ignored, the pool reconnects', { origin });
      return;
    }
    // Anything else: what Node does without a listener, the stack on stderr and exit code 1.
    process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    if (isDriverTypeFetchFailure(reason)) {
      log('postgres.js lost a connection while it read the array types (porsager/postgres#1192); ignored, the pool reconnects', {
        error: String((reason as { code?: unknown }).code ?? reason),
      });
      return;
    }
    // Anything else: thrown again, so the listener above prints it and exits as Node would.
    throw reason;
  });
}
