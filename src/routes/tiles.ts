// Tile routes (c2sp.org/tlog-tiles) under the log prefix /v1/log/: hash tiles and entry bundles,
// static and cacheable, so standard tlog tooling (and the monitor, docs/witnessing.md) can follow
// the log without the JSON routes.
import { badRequest, notFound } from '../errors.ts';
import { defineRoutes } from '../http/route.ts';
import { readEntryBundle } from '../proof/entryBundle.ts';
import { readHashTile, tileServable } from '../tlog/tiles.ts';
import { parseTilePath, tilePath, TILE_WIDTH, type TileRef } from '@escrow-settlement/protocol/tlog/tiles';

/** Full tiles never change (tlog-tiles); a partial tile's bytes never change either, but servers may drop it once the full tile exists. */
const FULL_CACHE = 'public, max-age=31536000, immutable';
const PARTIAL_CACHE = 'public, max-age=300';

function parse(raw: string): TileRef {
  try {
    return parseTilePath(raw);
  } catch (err) {
    throw badRequest(
      `tile path: ${(err as Error).message} (the form is tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>], N as x001/x234/067)`,
    );
  }
}

export const tileRoutes = defineRoutes({ tag: 'log', access: 'public', rate: 'public' }, [
  {
    route: 'GET /v1/log/tile/:tile+',
    summary:
      'C2SP tlog-tiles: `tile/<L>/<N>[.p/<W>]` is a hash tile (the W <= 256 hashes of tree level 8L from index 256N, 32 bytes each); `tile/entries/<N>[.p/<W>]` an entry bundle (each entry a big-endian uint16 length and the entry: JCS(proof), whose leaf hash is SHA-256(0x00 || entry)). N is written in 3-digit elements, all but the last prefixed with x (1234067 = x001/x234/067). Partial tiles exist only for the sizes of published checkpoints; full tiles are immutable.',
    success: { status: 200, description: 'application/octet-stream: the tile or entry bundle', contentType: 'application/octet-stream' },
    errors: ['bad_request', 'not_found', 'rate_limited'],
    async handler({ params, query, svc, request, rawPath }) {
      for (const [k] of query) throw badRequest(`${k} is not a known query parameter (tiles take none)`);
      const t = parse(params.tile);
      // One URL per tile (docs/witnessing.md "Tiles"): the path as sent must be the canonical one, not
      // a spelling that URL parsing or the router turned into it (dot segments, %-escapes, `//`).
      const canonical = `/v1/log/${tilePath(t)}`;
      if ((rawPath ?? new URL(request.url).pathname) !== canonical)
        throw notFound(`not the canonical path of a tile: tiles are served only at their canonical path (${canonical})`);
      if (!(await tileServable(svc.db, t))) {
        throw notFound(
          `tile ${params.tile} does not exist (yet): ${t.width < TILE_WIDTH ? 'no published checkpoint has this partial width here' : 'the log does not cover this full tile'}`,
        );
      }
      const bytes = t.level === 'entries' ? await readEntryBundle(svc.db, t) : await readHashTile(svc.db, { ...t, level: t.level });
      return new Response(bytes as Uint8Array<ArrayBuffer>, {
        status: 200,
        headers: { 'content-type': 'application/octet-stream', 'cache-control': t.width === TILE_WIDTH ? FULL_CACHE : PARTIAL_CACHE },
      });
    },
  },
]);
