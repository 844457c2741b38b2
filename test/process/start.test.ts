import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBundle, run, startService, TSX, ROOT } from './proc.ts';
import { openPglite } from '../../src/db/pglite.ts';

test('the sandbox starts, answers /health, and a restart with the same DATA_DIR keeps agents and the issuer key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'escrow-'));
  try {
    const a = await startService(TSX, { DATA_DIR: dir });
    const h1 = await (await fetch(`${a.url}/health`)).json();
    assert.equal(h1.ok, true);
    const agent = await (await fetch(`${a.url}/v1/agents`, { method: 'POST', body: '{"label":"kept"}' })).json();
    assert.equal(await a.stop('SIGTERM'), 0, a.stderr());
    assert.match(a.stderr(), /"msg":"stopped"/);

    const b = await startService(TSX, { DATA_DIR: dir });
    const h2 = await (await fetch(`${b.url}/health`)).json();
    assert.equal(h2.issuer, h1.issuer);
    assert.equal(await b.stop('SIGINT'), 0, b.stderr());

    const db = await openPglite(dir);
    const rows = await db.query('SELECT label FROM agents WHERE id = $1', [agent.id]);
    await db.close();
    assert.deepEqual(rows, [{ label: 'kept' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SIGTERM lets an in-flight request finish before the process exits 0', async () => {
  const s = await startService(TSX, { DATA_DIR: ':memory:' });
  // A slow request: a body that trickles in over ~600 ms.
  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      c.enqueue(new TextEncoder().encode('{"label":'));
      await new Promise((r) => setTimeout(r, 600));
      c.enqueue(new TextEncoder().encode('"late"}'));
      c.close();
    },
  });
  const pending = fetch(`${s.url}/v1/agents`, { method: 'POST', body, duplex: 'half' } as RequestInit);
  await new Promise((r) => setTimeout(r, 200));
  s.child.kill('SIGTERM');
  const res = await pending;
  assert.equal(res.status, 201);
  assert.equal((await res.json()).label, 'late');
  assert.equal(await s.exited, 0);
});

test('a bad configuration value stops start-up with one line naming the variable', async () => {
  const r = await run(TSX, { PORT: 'eighty', DATA_DIR: ':memory:' });
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('npm warn')).length,
    1,
  );
  assert.match(r.stderr, /PORT/);
});

test('the esbuild bundle builds, runs with plain node from its folder, answers /health and stops cleanly', async () => {
  await buildBundle();
  assert.ok(existsSync(join(ROOT, 'dist/escrow-settlement.mjs')));
  const s = await startService(['dist/escrow-settlement.mjs'], { DATA_DIR: ':memory:' });
  const h = await (await fetch(`${s.url}/health`)).json();
  assert.equal(h.ok, true);
  assert.equal(await s.stop(), 0, s.stderr());
});
