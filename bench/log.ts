// Run 3: transparency-log proof latency at growing sizes. The log is filled directly in SQL (real
// RFC 6962 leaf and interior hashes, every complete subtree, level by level); proofs are read with
// src/log/store.ts (rootAt, inclusionAt, consistencyBetween) and the head through the HTTP route.
// Floor: one indexed point read of log_nodes at the same size (the cheapest read the table allows).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from '../src/db/types.ts';
import { consistencyBetween, inclusionAt, rootAt } from '../src/tlog/store.ts';
import { nodeListener } from '../src/node/adapter.ts';
import { fromHex } from '@escrow-settlement/protocol/crypto/bytes';
import { leafHash } from '@escrow-settlement/protocol/tlog/hash';
import { formatTileIndex } from '@escrow-settlement/protocol/tlog/tiles';
import { verifyConsistency, verifyInclusion } from '@escrow-settlement/protocol/tlog/verify';
import { client, dist, expectStatus, inProcessApp, log, type Dist, type Store } from './lib.ts';

export interface LogSizeRun {
  size: number;
  fillMs: number;
  root: Dist;
  inclusion: Dist;
  consistency: Dist;
  httpHeadUncached: Dist;
  httpHeadCached: Dist;
  /** GET /v1/log/tile/0/<N> of a random full tile (256 hashes by one index range scan of log_nodes). */
  httpTile: Dist;
  pointRead: Dist;
}

const LEAVES = `INSERT INTO log_nodes (level, idx, hash)
  SELECT 0, i, encode(sha256('\\x00'::bytea || int8send(i)), 'hex') FROM generate_series($1::bigint, $2::bigint - 1) AS i`;
const LEVEL = `INSERT INTO log_nodes (level, idx, hash)
  SELECT $1::smallint, a.idx / 2, encode(sha256('\\x01'::bytea || decode(a.hash, 'hex') || decode(b.hash, 'hex')), 'hex')
    FROM log_nodes a JOIN log_nodes b ON b.level = a.level AND b.idx = a.idx + 1
   WHERE a.level = $1::smallint - 1 AND a.idx >= $2::bigint * 2 AND a.idx < $3::bigint * 2 AND a.idx % 2 = 0`;

/** Grows the log from `from` to `to` leaves: the new leaves, then every subtree they complete. */
async function fill(db: Db, from: number, to: number): Promise<void> {
  await db.tx(async (tx) => {
    await tx.query(LEAVES, [from, to]);
    for (let level = 1; to >> level > 0; level++) {
      const lo = from >> level;
      const hi = to >> level;
      if (hi > lo) await tx.query(LEVEL, [level, lo, hi]);
    }
    await tx.query('UPDATE log_state SET size = $1 WHERE id = 1', [to]);
  });
  await db.exec('ANALYZE log_nodes');
}

const leafOf = (i: number) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(i));
  return leafHash(b);
};

const rand = (n: number) => Math.floor(Math.random() * n);

async function timed<T>(out: number[], fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const r = await fn();
  out.push(performance.now() - t);
  return r;
}

export async function logBench(store: Store, sizes: number[], samples: number): Promise<LogSizeRun[]> {
  const db = store.db;
  const app = inProcessApp(db);
  const server: Server = createServer(nodeListener(app, { trustProxy: false }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const c = client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 1);
  const out: LogSizeRun[] = [];
  let filled = 0;
  try {
    for (const size of [...sizes].sort((a, b) => a - b)) {
      const t = performance.now();
      await fill(db, filled, size);
      const fillMs = performance.now() - t;
      filled = size;
      log(`log: ${size} leaves filled in ${(fillMs / 1000).toFixed(1)} s`);
      // The fill is real: an inclusion and a consistency proof verify against the JS tree hashes.
      const idx = rand(size);
      const inc = await inclusionAt(db, idx, size);
      if (
        !verifyInclusion(
          leafOf(idx),
          idx,
          size,
          inc.auditPath.map((h) => fromHex(h)),
          fromHex(inc.rootHash),
        )
      )
        throw new Error(`log fill ${size}: inclusion proof does not verify`);
      const m = 1 + rand(size);
      const con = await consistencyBetween(db, m, size);
      if (
        !verifyConsistency(
          m,
          size,
          fromHex(con.firstRoot),
          fromHex(con.secondRoot),
          con.path.map((h) => fromHex(h)),
        )
      )
        throw new Error(`log fill ${size}: consistency proof does not verify`);
      const s = {
        root: [] as number[],
        inclusion: [] as number[],
        consistency: [] as number[],
        uncached: [] as number[],
        cached: [] as number[],
        tile: [] as number[],
        point: [] as number[],
      };
      const fullTiles = Math.floor(size / 256);
      const warm = Math.min(out.length === 0 ? 60 : 20, samples);
      for (let i = 0; i < warm + samples; i++) {
        const keep = i >= warm;
        const sink = (a: number[]) => (keep ? a : []);
        await timed(sink(s.root), () => rootAt(db, size));
        await timed(sink(s.inclusion), () => inclusionAt(db, rand(size), size));
        await timed(sink(s.consistency), () => consistencyBetween(db, 1 + rand(size), size));
        await timed(sink(s.point), () => db.query('SELECT hash FROM log_nodes WHERE level = $1 AND idx = $2', [0, rand(size)]));
        // The head route signs once per size and caches it in log_heads: measure both paths.
        await db.query('DELETE FROM log_heads');
        const head = await timed(sink(s.uncached), () => c.req('GET', '/v1/log/head'));
        expectStatus(head, 200, 'GET /v1/log/head');
        if (head.json.logSize !== size) throw new Error(`GET /v1/log/head says ${head.json.logSize}, expected ${size}`);
        expectStatus(await timed(sink(s.cached), () => c.req('GET', '/v1/log/head')), 200, 'GET /v1/log/head');
        // A full tile needs no head: it is served once the log covers it (c2sp.org/tlog-tiles).
        if (fullTiles > 0) {
          const tile = await timed(sink(s.tile), () => c.req('GET', `/v1/log/tile/0/${formatTileIndex(rand(fullTiles))}`));
          expectStatus(tile, 200, 'GET /v1/log/tile/0/<N>');
          if (tile.text.length === 0) throw new Error('GET /v1/log/tile/0/<N> answered an empty body');
        }
      }
      out.push({
        size,
        fillMs,
        root: dist(s.root),
        inclusion: dist(s.inclusion),
        consistency: dist(s.consistency),
        httpHeadUncached: dist(s.uncached),
        httpHeadCached: dist(s.cached),
        httpTile: dist(s.tile),
        pointRead: dist(s.point),
      });
    }
  } finally {
    c.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return out;
}
