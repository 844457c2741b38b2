// Mandates: principal-signed caps, idempotent by content hash, with usage (docs/protocol.md §8).
import type { CommandDeps } from '../commandDeps.ts';
import { AppError, notFound } from '../errors.ts';
import { newId } from '../crypto/ids.ts';
import { hashJson } from '@escrow-settlement/protocol/crypto/hash';
import { verifyJson } from '@escrow-settlement/protocol/crypto/ed25519';
import { mandateUsage, type MandateCaps } from './mandateCaps.ts';

export interface MandateInput {
  principal: string;
  caps: MandateCaps;
  signature: { signer: string; signature: string };
}

type Row = { id: string; hash: string; principal: string; caps: string; signature: string; spent: string };

function toJson(r: Row) {
  const caps = JSON.parse(r.caps) as MandateCaps;
  return {
    id: r.id,
    principal: r.principal,
    caps,
    signature: JSON.parse(r.signature),
    hash: r.hash,
    usage: mandateUsage(caps, BigInt(r.spent)),
  };
}

const COLS = 'id, hash, principal, caps, signature, spent::text AS spent';

/** Registers a mandate; returns it with `created` false when the same content was registered before. */
export async function registerMandate(
  svc: CommandDeps,
  m: MandateInput,
): Promise<{ created: boolean; mandate: ReturnType<typeof toJson> }> {
  if (m.signature.signer !== m.principal)
    throw new AppError('mandate_violation', 'signature.signer is not the principal: a mandate must be signed by its principal');
  if (!verifyJson({ principal: m.principal, caps: m.caps }, m.signature.signature, m.principal)) {
    throw new AppError('mandate_violation', 'signature.signature does not verify over JCS {principal, caps} with the principal key');
  }
  const hash = hashJson({ principal: m.principal, caps: m.caps });
  const inserted = await svc.db.query<Row>(
    `INSERT INTO mandates (id, hash, principal, caps, signature, created_at) VALUES ($1, $2, $3, $4, $5, svc_now())
     ON CONFLICT (hash) DO NOTHING RETURNING ${COLS}`,
    [newId('mnd'), hash, m.principal, JSON.stringify(m.caps), JSON.stringify(m.signature)],
  );
  if (inserted.length === 1) return { created: true, mandate: toJson(inserted[0]) };
  const [existing] = await svc.db.query<Row>(`SELECT ${COLS} FROM mandates WHERE hash = $1`, [hash]);
  return { created: false, mandate: toJson(existing) };
}

export async function getMandate(svc: CommandDeps, id: string) {
  const rows = await svc.db.query<Row>(`SELECT ${COLS} FROM mandates WHERE id = $1`, [id]);
  if (rows.length === 0) throw notFound(`no mandate ${id}`);
  return toJson(rows[0]);
}
