// Which methods a path takes (RFC 9110 §9, §10.2.1 Allow): the 405 for a known path with another
// method, and OPTIONS, both read off the router's own table so they can never disagree with routing.
import { AppError } from '../errors.ts';

/** Methods the service serves somewhere; anything else (TRACE, CONNECT, PROPFIND…) is 405 on every path. */
export const SERVED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS']);
const ORDER = ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'];

/** itty-router's table entry: [METHOD, pattern, handlers, path]. */
type RouterEntry = [string, RegExp, ...unknown[]];

/** A function from a pathname to its Allow list (empty for an unknown path). HEAD goes with GET. */
export function allowTable(entries: ReadonlyArray<RouterEntry>): (pathname: string) => string[] {
  return (pathname) => {
    const found = new Set<string>();
    for (const [method, re] of entries) if (re.test(pathname)) found.add(method);
    if (found.size === 0) return [];
    if (found.has('GET')) found.add('HEAD');
    found.add('OPTIONS');
    return ORDER.filter((m) => found.has(m));
  };
}

export function methodNotAllowed(method: string, pathname: string, allow: string[]): AppError {
  const shown = JSON.stringify(method.slice(0, 32));
  const message = allow.length
    ? `${pathname} does not take ${shown}; it takes ${allow.join(', ')}`
    : `the method ${shown} is not served on any path`;
  return new AppError('method_not_allowed', message, { headers: { allow: allow.join(', ') } });
}
