// C2SP tlog-tiles (c2sp.org/tlog-tiles): tile paths, which tiles a tree size has, and a HashReader
// that answers any complete subtree of a tree from its tiles alone, so roots and proofs can be
// rebuilt by someone who trusts nothing but a signed checkpoint. Web APIs only.
import { EMPTY_ROOT, isHash, nodeHash } from './hash.ts';

/** A complete subtree: leaves [index * 2^level, (index + 1) * 2^level); level 0 = leaf hashes. */
export type NodeId = { level: number; index: number };

/** Tile height: a level-L tile holds hashes of tree level 8L (tlog-tiles "Merkle Tree"). */
export const TILE_HEIGHT = 8;
/** Hashes (or entries) in a full tile. */
export const TILE_WIDTH = 256;
/** The highest tile level the spec allows in a path. */
export const MAX_TILE_LEVEL = 63;

/** A hash tile (level >= 0) or an entry bundle (level "entries"); width 256 is a full tile. */
export type TileRef = { level: number | 'entries'; index: number; width: number };

/** `N` in its path form: zero-padded 3-digit elements, all but the last prefixed with "x" (1234067 → x001/x234/067). */
export function formatTileIndex(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('tile index must be a non-negative safe integer');
  const groups: string[] = [];
  do {
    groups.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** The path of a tile under the log prefix: `tile/<L>/<N>[.p/<W>]` or `tile/entries/<N>[.p/<W>]`. */
export function tilePath(t: TileRef): string {
  if (!Number.isInteger(t.width) || t.width < 1 || t.width > TILE_WIDTH) throw new RangeError('tile width must be 1..256');
  if (t.level !== 'entries' && (!Number.isInteger(t.level) || t.level < 0 || t.level > MAX_TILE_LEVEL))
    throw new RangeError('tile level must be 0..63');
  return `tile/${t.level}/${formatTileIndex(t.index)}${t.width < TILE_WIDTH ? `.p/${t.width}` : ''}`;
}

/**
 * Parses what follows `tile/` in a tile URL. Only the canonical form is accepted (no leading zeros
 * in L or W, no leading "x000" element), so each tile has exactly one URL for caches. Throws a
 * TypeError saying what is wrong.
 */
export function parseTilePath(rest: string): TileRef {
  const parts = rest.split('/');
  const levelText = parts.shift() ?? '';
  let level: number | 'entries';
  if (levelText === 'entries') level = 'entries';
  else if (/^(0|[1-9][0-9]?)$/.test(levelText) && Number(levelText) <= MAX_TILE_LEVEL) level = Number(levelText);
  else
    throw new TypeError(
      `tile level must be "entries" or a decimal 0-63 without leading zeros, got ${JSON.stringify(levelText.slice(0, 20))}`,
    );
  let width = TILE_WIDTH;
  const last = parts[parts.length - 1];
  if (parts.length >= 2 && parts[parts.length - 2].endsWith('.p')) {
    if (!/^[1-9][0-9]{0,2}$/.test(last) || Number(last) > 255)
      throw new TypeError(`partial tile width must be a decimal 1-255 without leading zeros, got ${JSON.stringify(last.slice(0, 20))}`);
    width = Number(last);
    parts.pop();
    parts[parts.length - 1] = parts[parts.length - 1].slice(0, -2);
  }
  if (parts.length === 0 || parts.length > 6) throw new TypeError('tile index must be 1 to 6 path elements (x001/x234/067)');
  let index = 0;
  parts.forEach((p, i) => {
    const want = i < parts.length - 1 ? /^x[0-9]{3}$/ : /^[0-9]{3}$/;
    if (!want.test(p))
      throw new TypeError(
        `tile index element ${JSON.stringify(p.slice(0, 20))} must be ${i < parts.length - 1 ? '"x" and 3 digits' : '3 digits'}`,
      );
    index = index * 1000 + Number(p.replace('x', ''));
  });
  if (parts.length > 1 && parts[0] === 'x000') throw new TypeError('tile index must not start with x000 (use the shortest form)');
  if (!Number.isSafeInteger(index)) throw new TypeError('tile index is too large');
  return { level, index, width };
}

/** How many complete nodes tree level `treeLevel` has in a `size`-leaf tree. */
export const nodesAtLevel = (size: number, treeLevel: number): number => Math.floor(size / 2 ** treeLevel);

/**
 * The width of tile (level, index) in a `size`-leaf tree: 256 when full, 1-255 when partial, 0 when
 * the tree has no node in it yet. Entry bundles go with level 0.
 */
export function tileWidthAt(size: number, level: number | 'entries', index: number): number {
  const count = nodesAtLevel(size, TILE_HEIGHT * (level === 'entries' ? 0 : level));
  return Math.max(0, Math.min(TILE_WIDTH, count - index * TILE_WIDTH));
}

/** Fetches a tile's bytes (width * 32 bytes for a hash tile). */
export type TileFetcher = (tile: TileRef) => Promise<Uint8Array>;

/** Splits a hash tile into its hashes; throws when its length is not width * 32. */
export function tileHashes(bytes: Uint8Array, width: number): Uint8Array[] {
  if (!(bytes instanceof Uint8Array) || bytes.length !== width * 32)
    throw new TypeError(`a hash tile of width ${width} must be ${width * 32} bytes, got ${bytes?.length}`);
  return Array.from({ length: width }, (_, i) => bytes.slice(i * 32, i * 32 + 32));
}

/** Splits an entry bundle into entries: each a big-endian uint16 length and that many bytes. */
export function bundleEntries(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    if (pos + 2 > bytes.length) throw new TypeError('entry bundle ends inside a length prefix');
    const len = (bytes[pos] << 8) | bytes[pos + 1];
    if (pos + 2 + len > bytes.length) throw new TypeError('entry bundle ends inside an entry');
    out.push(bytes.slice(pos + 2, pos + 2 + len));
    pos += 2 + len;
  }
  return out;
}

/** Encodes entries as an entry bundle (each at most 65535 bytes). */
export function encodeBundle(entries: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(entries.reduce((n, e) => n + 2 + e.length, 0));
  let pos = 0;
  for (const e of entries) {
    if (e.length > 0xffff) throw new RangeError(`an entry of ${e.length} bytes does not fit a uint16 length`);
    out[pos] = e.length >> 8;
    out[pos + 1] = e.length & 0xff;
    out.set(e, pos + 2);
    pos += 2 + e.length;
  }
  return out;
}

/**
 * A HashReader (the shape the service's proofs read) over the tiles of a `size`-leaf tree: a node at a tree
 * level that is a multiple of 8 is read from its tile; any other complete node is folded from the
 * 2^k nodes of the tile level below it (RFC 6962 §2.1). Each tile is fetched once.
 */
export function tileHashReader(size: number, fetchTile: TileFetcher): (ids: NodeId[]) => Promise<Uint8Array[]> {
  const tiles = new Map<string, Promise<Uint8Array[]>>();
  const tileOf = (level: number, index: number): Promise<Uint8Array[]> => {
    const width = tileWidthAt(size, level, index);
    if (width === 0) return Promise.reject(new RangeError(`the ${size}-leaf tree has no tile ${level}/${index}`));
    const key = `${level}/${index}/${width}`;
    let t = tiles.get(key);
    if (!t) {
      t = fetchTile({ level, index, width }).then((bytes) => tileHashes(bytes, width));
      tiles.set(key, t);
    }
    return t;
  };
  const stored = async (treeLevel: number, index: number): Promise<Uint8Array> => {
    const level = treeLevel / TILE_HEIGHT;
    const hashes = await tileOf(level, Math.floor(index / TILE_WIDTH));
    const h = hashes[index % TILE_WIDTH];
    if (!isHash(h)) throw new RangeError(`tile ${level}/${Math.floor(index / TILE_WIDTH)} has no hash ${index % TILE_WIDTH}`);
    return h;
  };
  const node = async (id: NodeId): Promise<Uint8Array> => {
    if (id.index >= nodesAtLevel(size, id.level))
      throw new RangeError(`node ${id.level}/${id.index} is not complete in a ${size}-leaf tree`);
    const base = id.level - (id.level % TILE_HEIGHT);
    const span = 2 ** (id.level - base);
    let row = await Promise.all(Array.from({ length: span }, (_, i) => stored(base, id.index * span + i)));
    while (row.length > 1) row = Array.from({ length: row.length / 2 }, (_, i) => nodeHash(row[2 * i], row[2 * i + 1]));
    return row[0];
  };
  return (ids) => Promise.all(ids.map(node));
}

/** The complete subtrees whose hashes fold into MTH(D[0:size]), left to right (the set bits of size, highest first). */
export function rootNodes(size: number): NodeId[] {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError('size must be a non-negative safe integer');
  const out: NodeId[] = [];
  let begin = 0;
  for (let level = 52; level >= 0; level--) {
    const width = 2 ** level;
    if (begin + width <= size) {
      out.push({ level, index: begin / width });
      begin += width;
    }
  }
  return out;
}

/**
 * MTH(D[0:size]) (RFC 6962 §2.1) read through `read`. With a reader over a larger tree's tiles this
 * is the root that tree had at `size`: equal to an older checkpoint's root, it proves the two
 * consistent.
 */
export async function rootFromReader(size: number, read: (ids: NodeId[]) => Promise<Uint8Array[]>): Promise<Uint8Array> {
  const ids = rootNodes(size);
  if (ids.length === 0) return EMPTY_ROOT.slice();
  const hashes = await read(ids);
  let acc = hashes[hashes.length - 1];
  for (let i = hashes.length - 2; i >= 0; i--) acc = nodeHash(hashes[i], acc);
  return acc;
}
