import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { nodeListener } from '../../src/node/adapter.ts';
import { describeStores, expectError } from '../harness.ts';
import { parseCheckpoint, splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import {
  bundleEntries,
  formatTileIndex,
  parseTilePath,
  rootFromReader,
  tileHashReader,
  tilePath,
  tileWidthAt,
  type TileRef,
} from '@escrow-settlement/protocol/tlog/tiles';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { hex, issueSynthetic, leafHashOf, naiveRoot, sha256, unhex, type Issued } from './fixtures.ts';

const vectors = JSON.parse(readFileSync(new URL('../vectors/c2sp/tlog-tiles-paths.json', import.meta.url), 'utf8'));
const AMPLE = { PUBLIC_RATE_LIMIT_MAX: '1000000' };

/** GET with the request target sent byte for byte; the status and the head of the answer. */
function rawGet(port: number, target: string): Promise<{ status: number; head: string }> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1' }, () => s.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
    let text = '';
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('error', reject);
    s.on('close', () => {
      const head = text.split('\r\n\r\n', 1)[0];
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head });
    });
  });
}
const N = 260;

test('tile index path form follows the tlog-tiles vectors, both ways', () => {
  for (const { n, encoded } of vectors.nEncoding) {
    assert.equal(formatTileIndex(n), encoded, `N=${n}`);
    assert.deepEqual(parseTilePath(`0/${encoded}`), { level: 0, index: n, width: 256 });
  }
});

test('the tiles of each vector tree size: full count, partial width and paths', () => {
  for (const { treeSize, tiles } of vectors.treeSizes) {
    for (const t of tiles) {
      if (t.fullTiles > 0) assert.equal(tileWidthAt(treeSize, t.level, t.fullTiles - 1), 256, `${treeSize} L${t.level} last full`);
      assert.equal(tileWidthAt(treeSize, t.level, t.fullTiles), t.partialWidth, `${treeSize} L${t.level} partial`);
      if (t.lastFullPath) assert.equal(tilePath({ level: t.level, index: t.fullTiles - 1, width: 256 }), t.lastFullPath);
      if (t.partialPath) {
        assert.equal(tilePath({ level: t.level, index: t.fullTiles, width: t.partialWidth }), t.partialPath);
        assert.deepEqual(parseTilePath(t.partialPath.slice('tile/'.length)), { level: t.level, index: t.fullTiles, width: t.partialWidth });
      }
      if (t.entriesPath) {
        const ref = parseTilePath(t.entriesPath.slice('tile/'.length));
        assert.equal(ref.level, 'entries');
        assert.equal(tilePath(ref), t.entriesPath);
      }
    }
  }
});

test('non-canonical or malformed tile paths are refused', () => {
  for (const bad of [
    '00/000',
    '64/000',
    'x/000',
    '0/0',
    '0/0000',
    '0/x000/001',
    '0/001/002',
    '0/000.p/0',
    '0/000.p/256',
    '0/000.p/07',
    '0/000.p/',
    '0',
    'entries',
    'entries/000.p/x',
    '0/x1/000',
    '0/x001/x002/x003/x004/x005/x006/000',
  ]) {
    assert.throws(() => parseTilePath(bad), TypeError, bad);
  }
});

describeStores(
  'tile routes',
  (h) => {
    const issued: Issued[] = [];
    const tile = (path: string) => h().req('GET', `/v1/log/tile/${path}`);
    const bytesOf = async (path: string) => {
      const res = await h().app.fetch(new Request(`http://localhost/v1/log/tile/${path}`));
      return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
    };

    test('the empty log has no tile, full or partial', async () => {
      expectError(await tile('0/000'), 404, 'not_found');
      expectError(await tile('0/000.p/1'), 404, 'not_found');
      expectError(await tile('entries/000.p/1'), 404, 'not_found');
    });

    test(`${N} leaves (one per batch, so each size is published)`, async () => {
      for (let i = 0; i < N; i++) issued.push(await issueSynthetic(h().db, { trailLength: 1 }));
    });

    test('a full level-0 tile is the 256 leaf hashes, immutable and cacheable', async () => {
      const { res, bytes } = await bytesOf('0/000');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/octet-stream');
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(bytes.length, 256 * 32);
      for (let i = 0; i < 256; i++) assert.equal(hex(bytes.slice(i * 32, i * 32 + 32)), issued[i].leafHash, `hash ${i}`);
    });

    test('partial tiles: only widths of published sizes, not cached forever', async () => {
      const { res, bytes } = await bytesOf('0/001.p/4');
      assert.equal(res.status, 200);
      assert.notEqual(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.deepEqual(
        [0, 1, 2, 3].map((i) => hex(bytes.slice(i * 32, i * 32 + 32))),
        issued.slice(256, 260).map((x) => x.leafHash),
      );
      expectError(await tile('0/001.p/5'), 404, 'not_found'); // beyond the log
      expectError(await tile('0/001'), 404, 'not_found');
      // A size no head was ever published for: its partial tile does not exist.
      await h().db.query('DELETE FROM log_heads WHERE size = 100');
      expectError(await tile('0/000.p/100'), 404, 'not_found');
      assert.equal((await tile('0/000.p/101')).status, 200);
      // Level 1: the one complete node of tree level 8 (leaves 0..255).
      const l1 = await bytesOf('1/000.p/1');
      assert.equal(l1.res.status, 200);
      assert.equal(hex(l1.bytes), hex(naiveRoot(issued.slice(0, 256).map((x) => unhex(x.leafHash)))));
      expectError(await tile('1/000'), 404, 'not_found');
    });

    test('entry bundles carry each entry whose leaf hash the tile holds: JCS(proof)', async () => {
      const { res, bytes } = await bytesOf('entries/000');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      const entries = bundleEntries(bytes);
      assert.equal(entries.length, 256);
      entries.forEach((e, i) => {
        assert.equal(Buffer.from(e).toString('utf8'), canonicalize(issued[i].proof));
        assert.equal(hex(sha256(new Uint8Array([0]), e)), issued[i].leafHash);
      });
      const tail = bundleEntries((await bytesOf('entries/001.p/4')).bytes);
      assert.deepEqual(
        tail.map((e) => leafHashOf(JSON.parse(Buffer.from(e).toString('utf8')))),
        issued.slice(256).map((x) => x.leafHash),
      );
    });

    test("the checkpoint's root is rebuilt from tiles alone, and so is every earlier published root", async () => {
      const note = (await h().req('GET', '/v1/log/checkpoint')).text;
      const cp = parseCheckpoint(splitNote(note).text);
      assert.equal(cp.size, N);
      const fetched: string[] = [];
      const fetchTile = async (t: TileRef) => {
        const path = tilePath(t).slice('tile/'.length);
        fetched.push(path);
        const { res, bytes } = await bytesOf(path);
        assert.equal(res.status, 200, path);
        return bytes;
      };
      const reader = tileHashReader(cp.size, fetchTile);
      assert.equal(hex(await rootFromReader(cp.size, reader)), hex(cp.rootHash));
      // 260 = 256 + 4: the level-1 tile's one node and the partial level-0 tile's four leaves.
      assert.deepEqual(fetched.sort(), ['0/001.p/4', '1/000.p/1']);
      // Consistency without a proof: the old root recomputed from the new tree's tiles.
      for (const old of [1, 7, 100, 255, 256, 259]) {
        const { body } = await h().req('GET', `/v1/log/consistency/${old}/${N}`);
        assert.equal(hex(await rootFromReader(old, reader)), body.firstRoot, `size ${old}`);
      }
    });

    test('a tile is served only at its canonical path: other spellings of it are 404 or 400, never the tile', async () => {
      for (const spelling of ['0/%30%30%30', '0/00%30', 'entries/%30%30%30', '%30/000', 'entr%69es/000', '0/001.p/%34', '0/000/']) {
        const r = await bytesOf(spelling);
        assert.ok(r.res.status === 404 || r.res.status === 400, `${spelling}: ${r.res.status}`);
        assert.equal(r.res.headers.get('cache-control'), null, spelling);
      }
      // Through the Node edge, with raw request targets (a Request's URL would have resolved the dots).
      const server = createServer(nodeListener(h().app, { trustProxy: false }));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      try {
        const canonical = await rawGet(port, '/v1/log/tile/0/000');
        assert.equal(canonical.status, 200);
        assert.match(canonical.head, /cache-control: public, max-age=31536000, immutable/i);
        for (const target of [
          '/v1/log/tile/0/../0/000',
          '/v1/log/tile/0/%2e%2e/0/000',
          '/v1/log/tile/0/%2E%2E/0/000',
          '/v1/log/tile/0/.%2e/0/000',
          '/v1/log/tile/0/./000',
          '/v1/log/tile/0/%2e/000',
          '/v1/log/tile/entries/../entries/000',
          '/v1/log/tile/x/../0/000',
          '/v1/log/./tile/0/000',
          '/v1/log/tile//0/000',
          '/v1//log/tile/0/000',
          '/v1/log/tile/0//000',
          '/v1/log/tile/0/%30%30%30',
          '/v1/log/tile/0/000/.',
          'http://127.0.0.1/v1/log/tile/0/../0/000',
        ]) {
          const r = await rawGet(port, target);
          assert.ok(r.status === 404 || r.status === 400, `${target}: ${r.status}`);
          assert.doesNotMatch(r.head, /immutable/i, target);
        }
      } finally {
        await new Promise((r) => server.close(r));
      }
    });

    test('a malformed tile path or a query is a 400 naming the tile path', async () => {
      for (const bad of ['0/0000', '0/x000/001', '0/000.p/0', 'nine/000', '0/000.p/256']) {
        assert.match(expectError(await tile(bad), 400, 'bad_request'), /tile path/, bad);
      }
      assert.match(expectError(await tile('0/000?w=1'), 400, 'bad_request'), /w is not a known query parameter/);
    });
  },
  AMPLE,
);
