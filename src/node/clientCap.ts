// The per-client concurrency cap at the edge (CLIENT_MAX_CONCURRENCY, docs/security.md "The edge"):
// one address with that many requests open gets 429 for the next one at once, without app.fetch,
// a database query or a queue, so a burst from one client cannot make every other client wait.

export interface ClientCap {
  /** Takes a place for `client`; false when it already has `max` requests open. */
  enter(client: string): boolean;
  /** Gives the place back (once per successful enter). */
  leave(client: string): void;
  /** Requests open now for `client` (tests, metrics). */
  open(client: string): number;
}

export function createClientCap(max: number): ClientCap {
  const open = new Map<string, number>();
  return {
    enter(client) {
      const n = open.get(client) ?? 0;
      if (n >= max) return false;
      open.set(client, n + 1);
      return true;
    },
    leave(client) {
      const n = (open.get(client) ?? 1) - 1;
      if (n <= 0) open.delete(client);
      else open.set(client, n);
    },
    open: (client) => open.get(client) ?? 0,
  };
}
