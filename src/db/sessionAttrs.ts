// Which libpq `target_session_attrs` a DATABASE_URL may name (docs/operations.md §1). Pure.

/**
 * The `target_session_attrs` a DATABASE_URL names (libpq's query parameter), or undefined. Read from
 * the text, not through URL: a libpq multi-host authority (`h1:5432,h2:5433`) is not a valid URL host.
 */
export function targetSessionAttrs(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  return new URLSearchParams(url.slice(q + 1).split('#')[0]).get('target_session_attrs') ?? undefined;
}

/**
 * The session kinds the service accepts: a server that is not in recovery (docs/operations.md §1).
 * The service writes on every command, so a standby is never useful to it; any other libpq value
 * (`any`, `read-only`, `standby`, `prefer-standby`) is refused at start-up (src/config.ts).
 */
export const WRITABLE_SESSION_ATTRS = ['read-write', 'primary'] as const;
