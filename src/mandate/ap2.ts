// AP2 v0.2 Payment Mandates as an escrow's authority: challenges, the chain's verification and binding, and the mandate's budget and recurrence kept in the escrow's transaction (docs/ap2.md).
import type { Queryable, Stmt } from '../db/types.ts';
import { AppError, badRequest } from '../errors.ts';
import { Ap2Refusal } from '@escrow-settlement/protocol/ap2/sdjwt';
import { verifyOpenCheckout, verifyPaymentChain, type Ap2Issuers, type VerifiedChain } from '@escrow-settlement/protocol/ap2/chain';
import { bindToEscrow, evaluateConstraints, type Bound, type Pisp } from '@escrow-settlement/protocol/ap2/constraints';
import { b64uEncode } from '@escrow-settlement/protocol/ap2/jose';

/** A challenge's lifetime (docs/ap2.md §2). */
export const CHALLENGE_SECONDS = 300;

/** What the service holds to accept AP2 mandates: the trusted issuers (AP2_ISSUERS). */
export interface Ap2Trust {
  issuers: Ap2Issuers;
  audience: string;
  pisp: Pisp | null;
}

/** The `ap2` member of an escrow creation. */
export interface Ap2Input {
  paymentMandate: string;
  checkoutMandate?: string;
}

/** 400 naming AP2_ISSUERS when AP2 is off: no trusted issuer is configured. */
export function ap2Off(field: string): AppError {
  return badRequest(`${field}: AP2 is not enabled on this service (AP2_ISSUERS names no trusted issuer keys)`);
}

/** An Ap2Refusal as the answer: 400 for a malformed chain, else 422 mandate_violation naming the check. */
export function refusalError(err: unknown): unknown {
  if (!(err instanceof Ap2Refusal)) return err;
  if (err.malformed) return badRequest(`${err.field === 'ap2.format' ? 'ap2.paymentMandate' : err.field}: ${err.message}`);
  return new AppError('mandate_violation', `${err.field}: ${err.message}`, { status: 422 });
}

const replayed = (message: string) => new AppError('replayed', message);

/** Issues a single-use nonce for `scope` (the caller's minted key, or null for root and the open sandbox). */
export async function issueChallenge(q: Queryable, audience: string, scope: string | null) {
  const nonce = b64uEncode(crypto.getRandomValues(new Uint8Array(32)));
  // Expired challenges go in the same statement: a used or expired nonce is refused either way.
  const [row] = await q.query<{ expires_at: Date }>(
    `WITH gone AS (DELETE FROM ap2_challenges WHERE expires_at < svc_now() - interval '1 hour')
     INSERT INTO ap2_challenges (nonce, audience, scope, expires_at) VALUES ($1, $2, $3, svc_now() + make_interval(secs => $4))
     RETURNING expires_at`,
    [nonce, audience, scope, CHALLENGE_SECONDS],
  );
  return { nonce, audience, expiresAt: new Date(row.expires_at).toISOString() };
}

/** A chain verified and bound to the escrow, before the state it needs is read. */
export interface Ap2Prepared {
  chain: VerifiedChain;
  bound: Bound;
  checkoutHash: string | null;
  input: Ap2Input;
  trust: Ap2Trust;
  scope: string | null;
}

/**
 * Everything that needs no state, at the service clock `now` (docs/ap2.md §2, §3): the chain, the
 * optional open Checkout Mandate, and the closed mandate's claims against the escrow.
 */
export function prepareAp2(
  input: Ap2Input,
  trust: Ap2Trust,
  escrow: { amount: bigint; asset: string; payeeKey: string },
  now: Date,
  scope: string | null,
): Ap2Prepared {
  try {
    const secs = Math.floor(now.getTime() / 1000);
    const chain = verifyPaymentChain(input.paymentMandate, { issuers: trust.issuers, now: secs, audience: trust.audience });
    const checkoutHash = input.checkoutMandate === undefined ? null : verifyOpenCheckout(input.checkoutMandate, trust.issuers, secs);
    const bound = bindToEscrow(chain.open, chain.closed, escrow, trust.pisp);
    return { chain, bound, checkoutHash, input, trust, scope };
  } catch (err) {
    throw refusalError(err);
  }
}

/**
 * Inside the escrow's transaction: spends the nonce, locks the open mandate's row, claims the
 * transaction_id and evaluates every constraint against the mandate's use so far. Returns the writes
 * that commit with the escrow (the mandate's new use; the escrow's AP2 record was written by the claim).
 *
 * Lock: FOR UPDATE on the open mandate's ap2_mandates row — serialises escrow creations under one
 * open mandate so the budget and recurrence checks and their increments are atomic; a concurrent
 * creation waits, then reads what the first committed.
 */
export async function claimAp2(tx: Queryable, p: Ap2Prepared, escrowId: string, amount: bigint): Promise<{ now: Date; writes: Stmt[] }> {
  const { chain, bound } = p;
  const spent = await tx.query(
    `UPDATE ap2_challenges SET used_at = svc_now()
      WHERE nonce = $1 AND used_at IS NULL AND expires_at > svc_now() AND audience = $2 AND scope IS NOT DISTINCT FROM $3 RETURNING nonce`,
    [chain.binding.nonce, p.trust.audience, p.scope],
  );
  if (spent.length === 0) {
    const [c] = await tx.query<{ used: boolean; expired: boolean; other: boolean }>(
      `SELECT used_at IS NOT NULL AS used, expires_at <= svc_now() AS expired, (audience <> $2 OR scope IS DISTINCT FROM $3) AS other
         FROM ap2_challenges WHERE nonce = $1`,
      [chain.binding.nonce, p.trust.audience, p.scope],
    );
    if (c?.used) throw replayed('ap2.nonce: this challenge nonce was already used; ask POST /v1/ap2/challenge for a new one');
    const why = !c ? 'was not issued by this service' : c.other ? 'was issued to another key' : 'has expired';
    throw new AppError('mandate_violation', `ap2.nonce: the closed mandate's nonce ${why}; ask POST /v1/ap2/challenge for one`, {
      status: 422,
    });
  }
  await tx.query('INSERT INTO ap2_mandates (budget_key) VALUES ($1) ON CONFLICT (budget_key) DO NOTHING', [chain.budgetKey]);
  const [m] = await tx.query<{ spent: string; occurrences: number; last_at: Date | null; now: Date }>(
    'SELECT spent::text AS spent, occurrences, last_at, svc_now() AS now FROM ap2_mandates WHERE budget_key = $1 FOR UPDATE',
    [chain.budgetKey],
  );
  const now = new Date(m.now);
  try {
    evaluateConstraints(chain.open, {
      bound,
      closed: chain.closed,
      pisp: p.trust.pisp,
      now,
      usage: { spent: BigInt(m.spent), occurrences: Number(m.occurrences), lastAt: m.last_at ? new Date(m.last_at) : null },
      checkoutHash: p.checkoutHash,
    });
  } catch (err) {
    throw refusalError(err);
  }
  // The escrow's AP2 record claims the transaction_id under its open mandate (unique per budget_key, not
  // across the service: another tenant's ids are neither blocked nor revealed). A second presentation
  // waits for the first to commit, then finds it taken. Its foreign keys are checked at commit, after
  // the escrow's insert.
  const claimed = await tx.query(
    `INSERT INTO ap2_escrows (escrow_id, transaction_id, budget_key, open_hash, closed_hash, closed_sd_hash, chain, checkout)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (budget_key, transaction_id) DO NOTHING RETURNING escrow_id`,
    [
      escrowId,
      bound.transactionId,
      chain.budgetKey,
      chain.openHash,
      chain.closedHash,
      chain.closedSdHash,
      p.input.paymentMandate,
      p.input.checkoutMandate ?? null,
    ],
  );
  if (claimed.length === 0)
    throw replayed(
      `ap2.transaction_id: transaction ${bound.transactionId} was already accepted under this mandate; a payment is made once`,
    );
  return {
    now,
    writes: [
      {
        text: 'UPDATE ap2_mandates SET spent = spent + $2, occurrences = occurrences + 1, last_at = $3 WHERE budget_key = $1',
        params: [chain.budgetKey, amount.toString(), now],
      },
    ],
  };
}

/** The trail's record of the chain (docs/ap2.md §6). */
export const ap2TrailRecord = (p: Ap2Prepared) => ({
  openHash: p.chain.openHash,
  closedHash: p.chain.closedHash,
  transactionId: p.bound.transactionId,
});

/** The longest chain or checkout mandate accepted, in characters (the request body's own cap bounds it too). */
export const AP2_CHAIN_MAX = 65_536;
