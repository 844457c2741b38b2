// Escrow commands: create (with mandate enforcement), fund, list (docs/protocol.md §3.2, §4.1, §8).
import { commandTx } from './deps.ts';
import type { CommandDeps } from '../commandDeps.ts';
import type { Stmt, TxOptions } from '../db/types.ts';
import { newId } from '../crypto/ids.ts';
import { hashJson } from '@escrow-settlement/protocol/crypto/hash';
import { AppError, badRequest, notFound } from '../errors.ts';
import { extend, GENESIS } from '@escrow-settlement/protocol/trail/chain';
import { idemClaim, idemStore, type IdemSlot } from '../db/idempotency.ts';
import { checkMandateCaps, type MandateCaps } from '../mandate/mandateCaps.ts';
import type { Terms } from '../terms/checks.ts';
import { advanceEscrow, lockEscrow, toJson, trailWrite, type EscrowRow, type Fee, type KeyRef, type Timeouts } from './escrowRow.ts';
import { transition } from './states.ts';
import { fuse } from '../db/fuse.ts';
import type { Metadata } from './metadata.ts';
import { ap2TrailRecord, claimAp2, prepareAp2, type Ap2Input, type Ap2Trust } from '../mandate/ap2.ts';

export type PartyInput = { keyRef: KeyRef } | { agentId: string };

export interface CreateInput {
  amount: bigint;
  asset: string;
  terms: Terms;
  payer: PartyInput;
  payee: PartyInput;
  arbiter?: PartyInput;
  mandateId?: string;
  /** An AP2 Payment Mandate chain as the escrow's authority (docs/ap2.md), with the trust it is checked against. */
  ap2?: { input: Ap2Input; trust: Ap2Trust };
  timeouts: Timeouts;
  /** The fee every closing that pays the payee takes from the payee's share (docs/protocol.md §24.1); absent: none. */
  fee?: Fee;
  /** An absolute end the refund window may not pass (an x402 payer's bound refundDeadline, docs/x402.md). */
  refundBy?: Date;
  /** The minted key the creator is confined to (tenancy, src/access/tenancy.ts scopeOf); null or absent: root or the open sandbox. */
  scope?: string | null;
  metadata?: Metadata;
  /** Statements that commit with the new escrow (an x402 collect's payment record, src/x402/facilitator/collect.ts). */
  alsoWrite?: (escrowId: string, now: Date) => Stmt[];
  /**
   * Fields the escrow.created entry records beside `escrow`: what the creation rests on, so a bundle
   * can be checked for its consent (`x402: {authorizationHash}`, docs/protocol.md §11.4).
   */
  createdWith?: Record<string, unknown>;
}

export const DEFAULT_TIMEOUTS: Timeouts = {
  deliverWithinSeconds: 86_400,
  resolveWithinSeconds: 86_400,
  decideWithinSeconds: 259_200,
  timeoutRuling: 'refund',
  refundWithinSeconds: 2_592_000,
};

/**
 * The parties' keys and the database clock in one round trip: every agent named (payer, payee,
 * arbiter) is read by one statement, which also reads svc_now() for a creation without a mandate.
 */
async function resolveParties(
  svc: CommandDeps,
  input: CreateInput,
): Promise<{ parties: { payer: KeyRef; payee: KeyRef; arbiter?: KeyRef }; now: Date; tenants: string[] }> {
  const named: Array<[string, PartyInput | undefined]> = [
    ['payer', input.payer],
    ['payee', input.payee],
    ['arbiter', input.arbiter],
  ];
  const ids = named.flatMap(([, p]) => (p && 'agentId' in p ? [p.agentId] : []));
  const [row] = await svc.db.query<{ now: Date; agents: string | null }>(
    `SELECT svc_now() AS now, (SELECT json_agg(json_build_object('id', id, 'label', label, 'publicKey', public_key, 'owner', owner_key))::text
                               FROM agents WHERE id = ANY($1::text[])) AS agents`,
    [ids],
  );
  const byId = new Map<string, { label: string | null; publicKey: string; owner: string | null }>(
    (JSON.parse(row.agents ?? '[]') as Array<{ id: string; label: string | null; publicKey: string; owner: string | null }>).map((a) => [
      a.id,
      a,
    ]),
  );
  // Tenancy (docs/protocol.md §18.3), read by the same statement: a confined creator names only its own agents
  // (another key's is 404, as if it did not exist); the creator and every named agent's owner see the escrow.
  const scope = input.scope ?? null;
  const tenants = new Set<string>(scope !== null ? [scope] : []);
  const out: Record<string, KeyRef> = {};
  for (const [role, p] of named) {
    if (!p) continue;
    if ('keyRef' in p) out[role] = p.keyRef;
    else {
      const agent = byId.get(p.agentId);
      if (!agent || (scope !== null && agent.owner !== scope)) throw notFound(`${role}AgentId: no agent ${p.agentId}`);
      if (agent.owner !== null) tenants.add(agent.owner);
      out[role] = { publicKey: agent.publicKey, ...(agent.label ? { label: agent.label } : {}) };
    }
  }
  if (out.payer.publicKey === out.payee.publicKey) throw badRequest('payee must be a different key from payer');
  if (out.arbiter && (out.arbiter.publicKey === out.payer.publicKey || out.arbiter.publicKey === out.payee.publicKey)) {
    throw badRequest('arbiter must be a different key from payer and payee');
  }
  return { parties: out as { payer: KeyRef; payee: KeyRef; arbiter?: KeyRef }, now: row.now, tenants: [...tenants] };
}

/**
 * The inputs whose reads a creation's keys cover (commandTx): the idempotency scope and the mandate it
 * locks; the others read nothing in the transaction (alsoWrite's and createdWith's are written as
 * given). A creation with any other input runs in a transaction of its own: whatever such an input
 * makes the creation read to decide, no key of it names.
 */
const KEYED_INPUTS = new Set([
  'amount',
  'asset',
  'terms',
  'payer',
  'payee',
  'arbiter',
  'mandateId',
  'timeouts',
  'fee',
  'refundBy',
  'scope',
  'metadata',
  'alsoWrite',
  'createdWith',
]);

function createTx(svc: CommandDeps, input: CreateInput, idem?: IdemSlot): TxOptions {
  if (Object.entries(input).some(([k, v]) => v !== undefined && !KEYED_INPUTS.has(k))) return {};
  return commandTx(svc, [idem && `idem:${idem.scope}`, input.mandateId && `mandate:${input.mandateId}`]);
}

export async function createEscrow(svc: CommandDeps, input: CreateInput, idem?: IdemSlot): Promise<Record<string, unknown>> {
  const { parties, now: readAt, tenants } = await resolveParties(svc, input);
  // The chain and its binding need no state: checked before the transaction, at the clock read with the parties.
  const ap2 = input.ap2
    ? prepareAp2(
        input.ap2.input,
        input.ap2.trust,
        { amount: input.amount, asset: input.asset, payeeKey: parties.payee.publicKey },
        readAt,
        input.scope ?? null,
      )
    : null;
  const txOpts = createTx(svc, input, idem);
  return svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const writes: Stmt[] = [];
    let mandateHash: string | null = null;
    let now: Date;
    const escrowId = newId('esc');
    if (ap2) {
      const claimed = await claimAp2(tx, ap2, escrowId, input.amount);
      now = claimed.now;
      mandateHash = ap2.chain.closedHash;
      writes.push(...claimed.writes);
    } else if (input.mandateId) {
      // Lock: the mandate row (FOR UPDATE) — serialises escrow creations under one mandate so
      // the cumulative cap check and the spent increment are atomic; others wait, then see it.
      // A confined creator uses only a mandate it registered (docs/protocol.md §18.3): another key's is 404.
      const scope = input.scope ?? null;
      const rows = await tx.query(
        `SELECT caps, hash, spent::text AS spent, svc_now() AS now FROM mandates WHERE id = $1${
          scope === null ? '' : ' AND EXISTS (SELECT 1 FROM mandate_tenants t WHERE t.mandate_id = $1 AND t.key_id = $2)'
        } FOR UPDATE`,
        scope === null ? [input.mandateId] : [input.mandateId, scope],
      );
      if (rows.length === 0) throw notFound(`mandateId: no mandate ${input.mandateId}`);
      const m = rows[0];
      now = m.now;
      checkMandateCaps(JSON.parse(m.caps) as MandateCaps, {
        payer: parties.payer.publicKey,
        payee: parties.payee.publicKey,
        amount: input.amount,
        asset: input.asset,
        now,
        spent: BigInt(m.spent),
      });
      mandateHash = m.hash;
      writes.push({ text: 'UPDATE mandates SET spent = spent + $2 WHERE id = $1', params: [input.mandateId, input.amount.toString()] });
    } else {
      // The clock read with the parties, a moment before this transaction (saves a round trip).
      now = readAt;
    }
    const escrow: EscrowRow = {
      id: escrowId,
      state: 'created',
      payer: parties.payer,
      payee: parties.payee,
      arbiter: parties.arbiter ?? null,
      amount: input.amount,
      asset: input.asset,
      terms: input.terms as EscrowRow['terms'],
      termsHash: hashJson(input.terms),
      timeouts: input.timeouts,
      deadlineAt: null,
      mandateId: input.mandateId ?? null,
      mandateHash,
      custodyStatus: 'unfunded',
      verdict: 'none',
      trailLength: 0,
      trailHead: GENESIS,
      createdAt: now,
      updatedAt: now,
      metadata: input.metadata && Object.keys(input.metadata).length > 0 ? input.metadata : null,
      fee: input.fee ?? null,
      refundDeadline: null,
      refunded: 0n,
    };
    // Metadata stays out of the trail (so out of every trail hash, proof and bundle): docs/protocol.md §3.5.
    const entries = extend(
      0,
      GENESIS,
      [
        {
          event: 'escrow.created',
          body: { escrow: toJson({ ...escrow, metadata: null }), ...input.createdWith, ...(ap2 ? { ap2: ap2TrailRecord(ap2) } : {}) },
        },
      ],
      now.toISOString(),
    );
    escrow.trailLength = 1;
    escrow.trailHead = entries[0].hash;
    const json = toJson(escrow);
    // One statement (src/db/fuse.ts): the escrow with its tenants (they take its seq), the mandate's
    // spending, the trail entry with its outbox rows, the stored answer; sent alone when nothing
    // was locked first, so it is its own transaction, else with COMMIT behind it.
    await tx.commitWith([
      fuse([
        {
          text: `${tenants.length ? 'WITH new_escrow AS (' : ''}INSERT INTO escrows (id, state, payer, payee, arbiter, payer_key, payee_key, arbiter_key, amount, asset, terms,
                 terms_hash, timeouts, deadline_at, mandate_id, mandate_hash, custody_status, verdict, trail_length, trail_head, created_at, updated_at, metadata, fee, refund_by)
               VALUES ($1, 'created', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, $13, $14, 'unfunded', 'none', 1, $15, $16, $16, $17, $18, $19)${
                 tenants.length
                   ? ` RETURNING id, seq)
               INSERT INTO escrow_tenants (key_id, seq, escrow_id) SELECT k, n.seq, n.id FROM unnest($20::text[]) AS k, new_escrow n`
                   : ''
               }`,
          params: [
            escrow.id,
            JSON.stringify(escrow.payer),
            JSON.stringify(escrow.payee),
            escrow.arbiter ? JSON.stringify(escrow.arbiter) : null,
            escrow.payer.publicKey,
            escrow.payee.publicKey,
            escrow.arbiter?.publicKey ?? null,
            input.amount.toString(),
            input.asset,
            JSON.stringify(input.terms),
            escrow.termsHash,
            JSON.stringify(input.timeouts),
            escrow.mandateId,
            mandateHash,
            escrow.trailHead,
            now,
            escrow.metadata ? JSON.stringify(escrow.metadata) : null,
            escrow.fee ? JSON.stringify(escrow.fee) : null,
            input.refundBy ?? null,
            ...(tenants.length ? [tenants] : []),
          ],
        },
        ...writes,
        trailWrite(escrow.id, entries, tenants),
        ...(input.alsoWrite?.(escrow.id, now) ?? []),
        ...idemStore(idem, 201, json),
      ]),
    ]);
    return json;
  }, txOpts);
}

export async function fundEscrow(svc: CommandDeps, id: string, idem?: IdemSlot): Promise<Record<string, unknown>> {
  const txOpts = commandTx(svc, [`escrow:${id}`, idem && `idem:${idem.scope}`]);
  return svc.db.tx(async (tx) => {
    await idemClaim(tx, idem);
    const e = await lockEscrow(tx, id);
    const state = transition('fund', e);
    // Custody holds the amount before the escrow says it is funded; a refusal leaves it created.
    const held = await svc.custody.lock?.(tx, {
      escrowId: id,
      reference: `cst_${id.slice(4)}`,
      amount: e.amount,
      asset: e.asset,
      payer: e.payer.publicKey,
      payee: e.payee.publicKey,
    });
    if (held && !held.ok)
      throw new AppError('custody_failed', `custody could not lock the funds (${held.error}); the escrow stays created: fund it again`);
    const deadlineAt = new Date(e.now.getTime() + e.timeouts.deliverWithinSeconds * 1000);
    const entries = extend(
      e.trailLength,
      e.trailHead,
      [{ event: 'escrow.funded', body: { deadlineAt: deadlineAt.toISOString() } }],
      e.now.toISOString(),
    );
    const updated: EscrowRow = {
      ...e,
      state,
      deadlineAt,
      custodyStatus: 'locked',
      trailLength: e.trailLength + 1,
      trailHead: entries[0].hash,
      updatedAt: e.now,
    };
    const json = toJson(updated);
    await tx.commitWith([
      fuse([...advanceEscrow(e, entries, { state, deadlineAt, custodyStatus: 'locked' }), ...idemStore(idem, 200, json)]),
    ]);
    return json;
  }, txOpts);
}
