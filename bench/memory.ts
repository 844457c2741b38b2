// Run 6 (second half): the service's RSS with 100k escrows in its store. The escrows are written
// directly in SQL, then a fresh service process is started on that store, a few routes are hit, and
// its VmRSS / VmHWM are read from /proc. The unpaginated GET /v1/escrows (every escrow, docs/protocol.md §9.2) is
// measured separately, since it is the one route whose memory grows with the table.
import { openPglite } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import { ensureKeys } from '../src/proof/keyEras.ts';
import { benchKeys, client, expectStatus, log, newStore, startChild, STORE, tempDir } from './lib.ts';
import { httpLifecycle, makeAgents } from './lifecycle.ts';
import { seedFunded } from './seed.ts';

export interface MemoryRun {
  escrows: number;
  seedMs: number;
  startRssMb: number;
  routes: string[];
  afterRoutes: { rssMb: number; hwmMb: number };
  unpaginated: { ms: number; bytes: number; rssMb: number; hwmMb: number };
}

const ROUTES = [
  'GET /health',
  '10 × GET /v1/escrows?limit=1000 (cursor)',
  'GET /v1/escrows?state=funded&limit=1000',
  '100 × GET /v1/escrows/{id}',
  'GET /v1/log/head',
  '20 × create → fund → deliver',
];

export async function memoryAfter(n: number): Promise<MemoryRun> {
  const t = performance.now();
  let target: Parameters<typeof startChild>[0];
  if (STORE === 'postgres') {
    const store = await newStore('mem');
    await seedFunded(store.db, n, 'mem', 'future');
    await store.db.exec('ANALYZE escrows; ANALYZE trail_entries');
    target = store;
  } else {
    // PGlite has one owner at a time: fill its directory here, close it, then the service opens it.
    const dir = tempDir('pglite');
    const db = await openPglite(dir);
    await migrate(db);
    await ensureKeys(db, (await benchKeys()).keys);
    await seedFunded(db, n, 'mem', 'future');
    await db.close();
    target = { pgliteDir: dir };
  }
  const seedMs = performance.now() - t;
  log(`memory: ${n} escrows seeded in ${(seedMs / 1000).toFixed(1)} s`);
  const child = await startChild(target);
  try {
    const startRssMb = child.rss().rssMb;
    const c = client(child.url, 4);
    const hit = async (path: string) => expectStatus(await c.req('GET', path), 200, `GET ${path}`);
    await hit('/health');
    // Ten pages of 1000 in creation order, then one page filtered by state.
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const page = await hit(`/v1/escrows?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      cursor = page.json.nextCursor;
    }
    await hit('/v1/escrows?state=funded&limit=1000');
    for (let i = 1; i <= 100; i++) await hit(`/v1/escrows/esc_mem${String(Math.ceil((i * n) / 100)).padStart(21, '0')}`);
    await hit('/v1/log/head');
    const agents = await makeAgents(c);
    for (let i = 0; i < 20; i++) await httpLifecycle(c, agents, () => {});
    const afterRoutes = child.rss();
    const u0 = performance.now();
    const all = await hit('/v1/escrows');
    const ms = performance.now() - u0;
    if (all.json.escrows.length < n) throw new Error(`GET /v1/escrows returned ${all.json.escrows.length} of ${n}`);
    const after = child.rss();
    c.close();
    return { escrows: n, seedMs, startRssMb, routes: ROUTES, afterRoutes, unpaginated: { ms, bytes: all.text.length, ...after } };
  } finally {
    await child.stop();
  }
}
