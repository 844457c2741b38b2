// Sandbox agents: generated keypairs held by the service; the secret never leaves this module's SQL.
import { fromHex, toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { generateKeyPair } from '@escrow-settlement/protocol/crypto/ed25519';
import { newId } from '../crypto/ids.ts';
import type { Queryable } from '../db/types.ts';
import { notFound } from '../errors.ts';
import type { Agent } from '@escrow-settlement/protocol/resources';

export type { Agent };

/** `owner`: the minted key registering it (tenancy, docs/protocol.md §18.3); null for the root key and the open sandbox. */
export async function createAgent(q: Queryable, label: string, owner: string | null = null): Promise<Agent> {
  const kp = generateKeyPair();
  const agent = { id: newId('agt'), label, publicKey: toHex(kp.publicKey) };
  await q.query('INSERT INTO agents (id, label, public_key, secret_key, created_at, owner_key) VALUES ($1, $2, $3, $4, svc_now(), $5)', [
    agent.id,
    label,
    agent.publicKey,
    toHex(kp.secretKey),
    owner,
  ]);
  return agent;
}

export interface HeldAgent extends Agent {
  secretKey: Uint8Array;
}

/** Loads held agents by id; an unknown id is 404 naming the field it came from. */
export async function loadAgents(q: Queryable, ids: string[], field: string): Promise<HeldAgent[]> {
  if (ids.length === 0) return [];
  const rows = await q.query<{ id: string; label: string; public_key: string; secret_key: string }>(
    'SELECT id, label, public_key, secret_key FROM agents WHERE id = ANY($1::text[])',
    [ids],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id, i) => {
    const r = byId.get(id);
    if (!r) throw notFound(`${ids.length > 1 ? `${field}[${i}]` : field}: no agent ${id}`);
    return { id: r.id, label: r.label, publicKey: r.public_key, secretKey: fromHex(r.secret_key, 'secret_key') };
  });
}
