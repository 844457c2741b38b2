// The restore drill (docs/operations.md §4) with started processes and real Postgres: closings
// cosigned by a witness, pg_dump, more witnessed closings, the dump restored into a fresh database,
// the service started on it with the same witness. Issuance is refused (503 naming both sizes),
// /health explains, reads work, the log does not grow, and the witness never receives a checkpoint
// inconsistent with the tree it holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_URL } from '../harness.ts';
import { caller, leafHashOf, merkleRoot, pgDatabase, sleep, type Call } from '../reliability/lib.ts';
import { createTestWitness } from '../witness/witness.ts';
import { serveWitness } from '../witness/http.ts';
import { parseCheckpoint, splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { startService, TSX, type Proc } from './proc.ts';

const TERMS = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };
const tools = ['pg_dump', 'psql'].every((t) => spawnSync('which', [t]).status === 0);
const skip = !PG_URL ? 'needs TEST_DATABASE_URL' : !tools ? 'needs pg_dump and psql' : false;

async function closeOne(call: Call, payer: string, payee: string): Promise<{ id: string; delivery: Awaited<ReturnType<Call>> }> {
  const e = await call('POST', '/v1/escrows', { amount: '2.5', asset: 'USDC', terms: TERMS, payerAgentId: payer, payeeAgentId: payee });
  assert.equal(e.status, 201, e.text);
  const f = await call('POST', `/v1/escrows/${e.body.id}/fund`);
  assert.equal(f.status, 200, f.text);
  const delivery = await call('POST', `/v1/escrows/${e.body.id}/delivery`, { agentId: payee, payload: { title: 'done' } });
  return { id: e.body.id, delivery };
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

test('the restore drill: a database restored to an earlier point issues nothing, and the witness sees no fork', {
  timeout: 240_000,
  skip,
}, async () => {
  const witness = createTestWitness('w1.drill.test');
  const served = await serveWitness(witness);
  const dir = mkdtempSync(join(tmpdir(), 'escrow-drill-'));
  const db1 = await pgDatabase('drill1');
  const db2 = await pgDatabase('drill2');
  const procs: Proc[] = [];
  try {
    const env = (url: string) => ({
      DATA_DIR: dir,
      DATABASE_URL: url,
      WITNESSES: `${witness.vkey}=${served.url}`,
      WITNESS_INTERVAL_MS: '100',
    });
    const first = await startService(TSX, env(db1.url), 90_000);
    procs.push(first);
    const call = caller(first.url);
    const issuer = await call('GET', '/.well-known/proof-issuer.json');
    witness.trust(issuer.body.keys.at(-1).vkey);
    const payer = (await call('POST', '/v1/agents', { label: 'payer' })).body.id;
    const payee = (await call('POST', '/v1/agents', { label: 'payee' })).body.id;
    const cosigned = (n: number) =>
      until(`the witness cosigns size ${n}`, 30_000, async () => [...witness.state.values()].some((s) => s.size === n));
    // 13 closings, cosigned; the dump; 8 more, cosigned.
    for (let i = 0; i < 13; i++) assert.equal((await closeOne(call, payer, payee)).delivery.status, 201);
    await cosigned(13);
    const dump = join(dir, 'drill.sql');
    const d = spawnSync('pg_dump', ['--no-owner', '-f', dump, db1.url], { encoding: 'utf8' });
    assert.equal(d.status, 0, d.stderr);
    for (let i = 0; i < 8; i++) assert.equal((await closeOne(call, payer, payee)).delivery.status, 201);
    await cosigned(21);
    // The tree the witness holds, rebuilt from the entries: every checkpoint it is sent must be a prefix of it.
    const entries = (await call('GET', '/v1/log/entries?start=0&end=21')).body.entries;
    assert.equal(entries.length, 21);
    const leaves = entries.map((en: { proof: unknown }) => leafHashOf(en.proof));
    assert.equal(await first.stop('SIGTERM'), 0, first.stderr());

    // The dump restored into a fresh database; the service started on it with the same witness.
    const r = spawnSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', '-d', db2.url, '-f', dump], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const seenBefore = witness.seen.length;
    const second = await startService(TSX, env(db2.url), 90_000);
    procs.push(second);
    const call2 = caller(second.url);
    await until('/health says behind-witnesses', 30_000, async () => (await call2('GET', '/health')).status === 503);
    const health = await call2('GET', '/health');
    assert.equal(health.body.ok, false);
    const { reason, ...log } = health.body.log;
    assert.deepEqual(log, { state: 'behind-witnesses', size: 13, witnessed: 21 });
    assert.match(reason, /holds a log of 13 entries, but 1 of its witnesses \(quorum 1\) hold 21/);
    assert.ok(health.headers['retry-after']);
    // Every closing is refused, naming both sizes; creating and funding still work; nothing is appended.
    for (let i = 0; i < 3; i++) {
      const { id, delivery } = await closeOne(call2, payer, payee);
      assert.equal(delivery.status, 503, delivery.text);
      assert.equal(delivery.body.error.code, 'unavailable');
      assert.ok(delivery.headers['retry-after']);
      assert.match(delivery.body.error.message, /holds a log of 13 entries, but its witnesses hold 21/);
      assert.equal((await call2('GET', `/v1/escrows/${id}`)).body.state, 'funded', 'reads work; the delivery left nothing');
    }
    await sleep(1500);
    const head = await call2('GET', '/v1/log/head');
    assert.equal(head.status, 200);
    assert.equal(head.body.logSize, 13, 'the log did not grow');
    const lines = second
      .stderr()
      .split('\n')
      .filter((l) => /behind its witnesses/.test(l));
    assert.equal(lines.length, 1, 'one log line for the operator');
    assert.match(lines[0], /holds 13 entries, they hold 21.*restore the database to a later point/);
    // The witness: still at 21, and every checkpoint it was ever sent is a prefix of its tree.
    assert.deepEqual(
      [...witness.state.values()].map((s) => s.size),
      [21],
    );
    assert.ok(witness.seen.length > seenBefore, 'the restored service asked the witness');
    for (const s of witness.seen) {
      const note = s.body.slice(s.body.indexOf('\n\n') + 2);
      const cp = parseCheckpoint(splitNote(note).text);
      assert.ok(cp.size <= 21, `the witness was sent size ${cp.size}, beyond its tree`);
      assert.equal(
        Buffer.from(cp.rootHash).toString('hex'),
        merkleRoot(leaves.slice(0, cp.size)).toString('hex'),
        `the checkpoint of size ${cp.size} sent to the witness is a prefix of its tree`,
      );
    }
    assert.equal(await second.stop('SIGTERM'), 0, second.stderr());
    process.stdout.write(
      `# drill: 21 closings cosigned (dump at 13); restored service refused 3 of 3 closings (503), /health 503 behind-witnesses 13/21; the witness received ${witness.seen.length} checkpoints, all prefixes of its tree\n`,
    );
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await served.close();
    await db1.drop();
    await db2.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});
