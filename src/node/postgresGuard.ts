// A known postgres.js 3.4.9 defect (porsager/postgres#1066, #1154, #1208; unmerged fixes #1168,
// #1176): a small write deferred with setImmediate can run after its connection's socket is gone,
// and `socket.write` on null throws from the timer, where no caller can catch it, ending the whole
// process during a database outage. By then the connection is already closed and its queries were
// rejected with CONNECTION_CLOSED, so dropping the write is what the upstream fix does. This guard
// swallows exactly that TypeError (logged once per occurrence) and lets everything else crash as
// Node would. Remove it when postgres.js ships the guard.
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
}
