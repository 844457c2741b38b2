// Requests Node's HTTP parser refuses before the app sees them (docs/protocol.md §19.3): each gets the JSON
// error envelope with an x-request-id, and the connection is closed after the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startService, TSX, type Proc } from './proc.ts';
import { assertRefused, MALFORMED } from './rawHttp.ts';

test('requests the HTTP parser refuses get the error envelope with x-request-id, and the connection is closed', {
  timeout: 60_000,
}, async () => {
  let proc: Proc | undefined;
  try {
    proc = await startService(TSX, { DATA_DIR: ':memory:' });
    for (const c of MALFORMED) await assertRefused(proc.url, c);
    assert.equal((await fetch(`${proc.url}/health`)).status, 200, 'still serving');
    assert.equal(await proc.stop(), 0);
    assert.doesNotMatch(proc.stderr(), /"msg":"(request failed|adapter error)"/);
  } finally {
    if (proc && proc.child.exitCode === null) proc.child.kill('SIGKILL');
  }
});
