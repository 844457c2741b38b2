// The Node edge under stress (docs/protocol.md §19.3; docs/design.md §2.3, §6, §7). The single cases run in `npm test`
// (test/process/*, test/deploy/*) and are imported here so the reliability run keeps them too; this
// file adds what those do not: processes racing for one DATA_DIR, and repeated database outages
// under load with an audit afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_URL } from '../harness.ts';
import { LOCK_FILE } from '../../src/node/dataDirLock.ts';
import { startService, TSX } from '../process/proc.ts';
import { hostPort, startTcpProxy } from '../process/tcpProxy.ts';
import { caller, counts, pgSchema, report, sleep, type Call } from './lib.ts';
import '../process/startup-failures.test.ts';
import '../process/dataDirLock.test.ts';
import '../process/parserErrors.test.ts';
import '../process/outage.test.ts';
import '../process/workingDir.test.ts';

test('processes started together on one DATA_DIR: exactly one serves, every other exits naming it; again after the winner is SIGKILLed', {
  timeout: 180_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-race-'));
  try {
    for (let round = 0; round < 2; round++) {
      const tries = Array.from({ length: 4 }, () => startService(TSX, { DATA_DIR: dir }).catch((e: Error) => e));
      const settled = await Promise.all(tries);
      counts.restarts += settled.length;
      const winners = settled.filter((s) => !(s instanceof Error));
      const losers = settled.filter((s): s is Error => s instanceof Error);
      assert.equal(winners.length, 1, `exactly one process serves (round ${round}): ${losers.map((e) => e.message).join(' | ')}`);
      const winner = winners[0] as Exclude<(typeof settled)[number], Error>;
      assert.equal(readFileSync(join(dir, LOCK_FILE), 'utf8').trim(), String(winner.child.pid));
      for (const e of losers) {
        assert.match(e.message, /exited with 1 before listening/);
        assert.match(
          e.message,
          new RegExp(`DATA_DIR: ${dir} is in use by another escrow-settlement process \\(pid ${winner.child.pid}\\)`),
        );
      }
      assert.equal((await fetch(`${winner.url}/health`)).status, 200);
      winner.child.kill('SIGKILL');
      await winner.exited;
      counts.kills++;
    }
    // The last SIGKILL left a stale lock: a plain start takes it over.
    const after = await startService(TSX, { DATA_DIR: dir });
    assert.equal(await after.stop(), 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  report('one process per DATA_DIR');
});

/** Mixed traffic until `stop` is set: creates, lists, reads; every status is tallied. */
async function traffic(call: Call, statuses: Map<string, number>, stop: { done: boolean }): Promise<void> {
  const agents: string[] = [];
  while (!stop.done) {
    const r = await Promise.all([
      call('POST', '/v1/agents', { label: 'load' }).catch((e: Error) => e),
      call('GET', '/v1/escrows?limit=5').catch((e: Error) => e),
      call('GET', '/v1/log/head').catch((e: Error) => e),
      call('GET', '/.well-known/proof-issuer.json').catch((e: Error) => e),
    ]);
    for (const res of r) {
      if (res instanceof Error) {
        const key = `no answer: ${res.message.slice(0, 120)}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        continue;
      }
      const key = res
        ? `${res.status}${res.status >= 400 ? ` ${res.body?.error?.code ?? (res.body?.ok === false ? 'health' : '?')}` : ''}`
        : 'no answer';
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    if (!(r[0] instanceof Error) && r[0].status === 201) agents.push(r[0].body.id);
  }
}

test('three database outages under load: only 503 unavailable (never 500), and the process recovers by itself each time', {
  timeout: 240_000,
  skip: !PG_URL && 'needs TEST_DATABASE_URL',
}, async () => {
  const pg = await pgSchema('outages');
  const proxy = await startTcpProxy(hostPort(PG_URL!));
  const viaProxy = new URL(pg.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  const proc = await startService(TSX, { DATABASE_URL: viaProxy.toString(), SWEEP_INTERVAL_MS: '200', PUBLIC_RATE_LIMIT_MAX: '1000000' });
  const statuses = new Map<string, number>();
  const recoveries: number[] = [];
  try {
    const call = caller(proc.url);
    const stop = { done: false };
    const load = Promise.all([traffic(call, statuses, stop), traffic(call, statuses, stop)]);
    for (let i = 0; i < 3; i++) {
      await sleep(1_500);
      await proxy.cut();
      await sleep(2_000);
      await proxy.restore();
      const back = Date.now();
      for (;;) {
        if ((await call('GET', '/health')).status === 200) break;
        assert.ok(Date.now() - back < 20_000, 'healthy again within 20 s');
        await sleep(100);
      }
      recoveries.push(Date.now() - back);
    }
    await sleep(1_000);
    stop.done = true;
    await load;
    const shown = Object.fromEntries(statuses);
    process.stdout.write(`# statuses under outages: ${JSON.stringify(shown)}; recovered after ${recoveries.join(', ')} ms\n`);
    const bad = [...statuses.keys()].filter((k) => !/^(200|201|503 unavailable)$/.test(k));
    assert.deepEqual(bad, [], `only 200/201 and 503 unavailable: ${JSON.stringify(shown)}`);
    assert.ok((statuses.get('503 unavailable') ?? 0) > 0, 'the outages were seen');
    assert.equal(proc.child.exitCode, null);
    assert.equal(await proc.stop(), 0, proc.stderr());
    counts.requests += [...statuses.values()].reduce((a, b) => a + b, 0);
  } catch (err) {
    process.stdout.write(`# service log tail:\n${proc.stderr().slice(-4000).replace(/^/gm, '# ')}\n`);
    throw err;
  } finally {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
    await proxy.close();
    await pg.drop();
  }
  report('database outages under load', { outages: 3, maxRecoveryMs: Math.max(0, ...recoveries) });
});
