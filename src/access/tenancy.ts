// Tenancy in hosted mode (docs/protocol.md §18.3): a minted key sees and acts on the agents it registered and
// the escrows where it registered a party; everything else is 404 to it, exactly as if it did not
// exist. The root key and the open sandbox see everything.
import type { Queryable } from '../db/types.ts';
import { notFound } from '../errors.ts';

/** The minted key a caller is confined to, or null when it sees everything (root, open sandbox). */
export const scopeOf = (caller: { keyId: string | null }): string | null =>
  caller.keyId !== null && caller.keyId !== 'root' ? caller.keyId : null;

const VISIBLE = {
  escrow: 'SELECT 1 FROM escrow_tenants WHERE escrow_id = $1 AND key_id = $2',
  mandate: 'SELECT 1 FROM mandate_tenants WHERE mandate_id = $1 AND key_id = $2',
  proof: 'SELECT 1 FROM proofs p JOIN escrow_tenants t ON t.escrow_id = p.escrow_id WHERE p.id = $1 AND t.key_id = $2',
} as const;

/** 404 unless the caller may see the escrow, the proof of an escrow, or the mandate named by `id`. */
export async function assertVisible(
  q: Queryable,
  caller: { keyId: string | null },
  kind: keyof typeof VISIBLE,
  id: string,
  field?: string,
): Promise<void> {
  const key = scopeOf(caller);
  if (key === null) return;
  const rows = await q.query(VISIBLE[kind], [id, key]);
  if (rows.length === 0) throw notFound(`${field ? `${field}: ` : ''}no ${kind} ${id}`);
}

/** Records that a confined key registered (or re-registered) a mandate, so it may see and use it. */
export async function claimMandate(q: Queryable, caller: { keyId: string | null }, mandateId: string): Promise<void> {
  const key = scopeOf(caller);
  if (key !== null)
    await q.query('INSERT INTO mandate_tenants (key_id, mandate_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [key, mandateId]);
}

/**
 * The keys that will see a new escrow: its creator (when confined) and the owners of the agents it
 * names. A confined creator may name only its own agents: another key's agent is 404 `field`.
 */
export async function tenantsOf(
  q: Queryable,
  scope: string | null,
  agents: Array<[field: string, id: string | undefined]>,
): Promise<string[]> {
  const named = agents.filter((a): a is [string, string] => a[1] !== undefined);
  const owners =
    named.length === 0
      ? []
      : await q.query<{ id: string; owner_key: string | null }>('SELECT id, owner_key FROM agents WHERE id = ANY($1::text[])', [
          named.map((a) => a[1]),
        ]);
  const ownerOf = new Map(owners.map((r) => [r.id, r.owner_key]));
  if (scope !== null) for (const [field, id] of named) if (ownerOf.get(id) !== scope) throw notFound(`${field}: no agent ${id}`);
  const keys = new Set<string>();
  if (scope !== null) keys.add(scope);
  for (const o of ownerOf.values()) if (o !== null) keys.add(o);
  return [...keys];
}

/** 404 naming the field when a confined caller names an agent it did not register. */
export async function assertOwnAgents(
  q: Queryable,
  caller: { keyId: string | null },
  ids: Array<[field: string, id: string | undefined]>,
): Promise<void> {
  const scope = scopeOf(caller);
  if (scope !== null) await tenantsOf(q, scope, ids);
}
