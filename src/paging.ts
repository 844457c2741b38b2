// Keyset pagination shared by every list route (docs/protocol.md §9.2): `limit` 1-1000, an opaque
// `cursor`, and `nextCursor` on a page when more rows exist.
//
// A cursor is the last row's key on a monotonic column (a bigserial `seq`, or a trail index), so the
// next page is `key > cursor ORDER BY key`: rows inserted meanwhile never shift a page or repeat one.
// The key is wrapped as base64url("<list>:<key>") so clients treat it as opaque, and a cursor from
// one list is refused by another instead of silently paging the wrong thing.
import { badRequest } from './errors.ts';

export const MAX_LIMIT = 1000;

export interface PageQuery {
  /** Page size; undefined = the whole list, as docs/protocol.md §9.2 describes each list. */
  limit?: number;
  /** Key of the last row already seen; null when starting from the first row. */
  after: bigint | null;
}

const b64url = (s: string) => btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

export function encodeCursor(list: string, key: bigint | number | string): string {
  return b64url(`${list}:${key}`);
}

export function decodeCursor(list: string, cursor: string): bigint {
  let text = '';
  try {
    if (cursor.length > 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('shape');
    text = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    text = '';
  }
  const m = /^([a-z]+):(\d{1,18})$/.exec(text);
  if (!m || m[1] !== list) throw badRequest('cursor is not a cursor of this list (pass nextCursor from a previous page of the same list)');
  return BigInt(m[2]);
}

/**
 * Reads `limit` and `cursor` (and refuses query parameters the route does not know, naming them:
 * docs/protocol.md §2.6). `extra` names the route's own filters.
 */
export function pageQuery(query: URLSearchParams, list: string, extra: readonly string[] = []): PageQuery {
  const known = [...extra, 'limit', 'cursor'];
  const seen = new Set<string>();
  for (const k of query.keys()) {
    if (!known.includes(k)) throw badRequest(`${k} is not a known query parameter (${known.join(', ')})`);
    if (seen.has(k)) throw badRequest(`${k} is given more than once`);
    seen.add(k);
  }
  const limitRaw = query.get('limit');
  let limit: number | undefined;
  if (limitRaw !== null) {
    if (!/^\d{1,4}$/.test(limitRaw) || Number(limitRaw) < 1 || Number(limitRaw) > MAX_LIMIT) {
      throw badRequest(`limit must be a whole number from 1 to ${MAX_LIMIT}`);
    }
    limit = Number(limitRaw);
  }
  const cursor = query.get('cursor');
  return { limit, after: cursor === null ? null : decodeCursor(list, cursor) };
}

/**
 * Cuts rows read with LIMIT limit + 1 into a page and the cursor of the next one (null at the end).
 * Without a limit every row is the page and there is no cursor.
 */
export function cutPage<T>(
  rows: T[],
  limit: number | undefined,
  list: string,
  keyOf: (row: T) => bigint | number | string,
): { page: T[]; nextCursor: string | null } {
  if (limit === undefined || rows.length <= limit) return { page: rows, nextCursor: null };
  const page = rows.slice(0, limit);
  return { page, nextCursor: encodeCursor(list, keyOf(page[page.length - 1])) };
}

/**
 * A list route's page of `rows` (read with sqlLimit), and the `{nextCursor}` to spread into its
 * answer: given only when the caller gave a limit (without one the whole list is the page).
 */
export function pageOf<T>(
  rows: T[],
  q: PageQuery,
  list: string,
  keyOf: (row: T) => bigint | number | string,
): { page: T[]; cursor: { nextCursor?: string | null } } {
  const { page, nextCursor } = cutPage(rows, q.limit, list, keyOf);
  return { page, cursor: q.limit === undefined ? {} : { nextCursor } };
}

/** SQL LIMIT for a page query: one more row than asked tells whether another page exists. */
export const sqlLimit = (limit: number | undefined): number | null => (limit === undefined ? null : limit + 1);
