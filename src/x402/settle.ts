// Settling an x402 payment: the whole escrow lifecycle for one request in one transaction (docs/protocol.md §15.3).
import type { Services } from '../services.ts';
import type { Db, Row, Stmt, Tx } from '../db/types.ts';
import { AppError } from '../errors.ts';
import { hashJson } from '@escrow-settlement/protocol/crypto/hash';
import { signJson } from '@escrow-settlement/protocol/crypto/ed25519';
import { parseAmount } from '../units/amounts.ts';
import { createEscrow, DEFAULT_TIMEOUTS, fundEscrow } from '../escrow/escrows.ts';
import { deliverySigningBody, submitDelivery } from '../escrow/deliver.ts';
import type { ProofSandboxPayload } from '@escrow-settlement/protocol/x402';
import { partySignatureWrite } from '../escrow/partySignatures.ts';
import { DEMO_RESOURCE, DEMO_RESOURCE_HASH, paymentRefusal, type Offer } from './offer.ts';
import type { DemoPayee } from './payee.ts';

/**
 * The services with a database that joins `tx`: every `db.tx(fn)` the domain commands open runs
 * `fn` inside `tx` (no savepoints), and their reads run there too; their commitWith is a plain batch. So createEscrow, fundEscrow and
 * submitDelivery (which closes through closeMatter) are reused unchanged, yet commit together with
 * the nonce or not at all: a throw anywhere rolls the whole lifecycle back (docs/design.md §3.1, "Every command
 * is one database transaction"). The same shape as routes/admin.ts's `serialised`.
 */
function joinTx(svc: Services, tx: Tx): Services {
  const refuse = () => Promise.reject(new Error('not available inside a joined transaction'));
  const db: Db = {
    kind: svc.db.kind,
    query: <T extends Row>(text: string, params?: unknown[]) => tx.query<T>(text, params),
    batch: (stmts: Stmt[]) => tx.batch(stmts),
    // A command's last batch is not the joined transaction's last: commitWith is a plain batch here.
    tx: <T>(fn: (t: Tx) => Promise<T>) => fn({ ...tx, commitWith: (stmts: Stmt[]) => tx.batch(stmts) }),
    exec: refuse,
    close: refuse,
  };
  return { ...svc, db };
}

export interface SettleInput {
  /** The signed authorization, checked against the offer (header.ts). */
  signed: ProofSandboxPayload;
  offer: Offer;
  payee: DemoPayee;
}

export interface Settled {
  escrowId: string;
  proofId: string;
  payer: string;
}

/**
 * One transaction: the nonce is taken; the escrow is created (payer = from, payee = the demo
 * payee, amount = value, terms = a hash check on the resource), funded, delivered by the demo
 * payee with its held key, verified, settled through custody, proven and logged, with trail
 * entries and outbox rows (docs/protocol.md §15.3: the full escrow lifecycle runs for the request).
 */
/** Client clocks may run a little ahead of the database's: the grace on validBefore's upper bound. */
export const VALID_BEFORE_SKEW_MS = 5_000;

export async function settlePayment(svc: Services, input: SettleInput): Promise<Settled> {
  const { signed, offer, payee } = input;
  const a = signed.authorization;
  const refuse = (message: string) => paymentRefusal('payment_invalid', message, offer);
  return svc.db.tx(async (tx) => {
    // Database time, as every deadline (docs/protocol.md §2.5): constant for the transaction, so the delivery's
    // submittedAt below is exactly the time submitDelivery reads.
    const [{ now }] = await tx.query<{ now: Date }>('SELECT svc_now() AS now');
    if (Date.parse(a.validBefore) <= now.getTime()) {
      throw refuse(`authorization.validBefore ${a.validBefore} has passed (service time ${now.toISOString()}); sign a fresh payment`);
    }
    // A payment is an offer to be taken now, not a standing one: validBefore at most the offer's
    // maxTimeoutSeconds ahead (plus a few seconds of clock skew), so a leaked header stops working
    // within a minute instead of in year 9999 (docs/security.md "x402 demo").
    const latest = now.getTime() + offer.v1.maxTimeoutSeconds * 1000 + VALID_BEFORE_SKEW_MS;
    if (Date.parse(a.validBefore) > latest) {
      throw refuse(
        `authorization.validBefore ${a.validBefore} is more than maxTimeoutSeconds (${offer.v1.maxTimeoutSeconds} s) after service time ${now.toISOString()}; sign a payment that expires sooner`,
      );
    }
    // Lock: the nonce's primary-key entry in x402_nonces. A concurrent replay of the same nonce
    // waits here until this transaction ends: if it commits, the replay inserts nothing and is
    // refused; if it rolls back, the replay takes the nonce. So a nonce settles exactly once.
    const taken = await tx.query(
      'INSERT INTO x402_nonces (nonce, created_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING RETURNING nonce',
      [a.nonce, now],
    );
    if (taken.length === 0) throw refuse(`nonce ${a.nonce} was already used: a payment settles once; sign a fresh payment`);

    const inTx = joinTx(svc, tx);
    const escrow = await createEscrow(inTx, {
      amount: parseAmount(a.value, 'authorization.value'),
      asset: a.asset,
      terms: { description: offer.v1.description, checks: [{ kind: 'hash', expected: DEMO_RESOURCE_HASH }] },
      payer: { keyRef: { publicKey: a.from } },
      payee: { keyRef: { publicKey: payee.publicKey, label: 'x402 demo payee' } },
      timeouts: DEFAULT_TIMEOUTS,
      createdWith: { x402: { authorizationHash: hashJson(a) } },
    });
    const escrowId = escrow.id as string;
    // The payer's authorization is the signature this matter rests on: kept for the offline bundle,
    // bound to the escrow.created entry (its payer, payee, amount and asset) (docs/protocol.md §11.4).
    await tx.batch([
      partySignatureWrite(escrowId, [{ kind: 'x402', trailIndex: 0, publicKey: a.from, signedBody: a, signature: signed.signature }]),
    ]);
    await fundEscrow(inTx, escrowId);
    // The demo payee signs its delivery like any client-signed payee (docs/protocol.md §2.7).
    const submittedAt = now.toISOString();
    const signature = signJson(deliverySigningBody(escrowId, hashJson(DEMO_RESOURCE), submittedAt), payee.secretKey);
    const result = await submitDelivery(inTx, escrowId, {
      form: 'client',
      payload: DEMO_RESOURCE,
      submittedAt,
      signature: { signer: payee.publicKey, signature },
    });
    // The payload is the resource its terms hash, so the verdict passes; anything else is a bug (500).
    if (!result.verdict.passed) throw new Error('x402 demo: the delivered resource failed its own terms');
    if (!result.proof) {
      // Custody could not settle: roll everything back (nonce included) rather than keep a paid
      // escrow whose resource was never served; the same payment can be sent again.
      throw new AppError(
        'custody_failed',
        'custody could not settle this payment; nothing was kept and the nonce is unused, so the same payment header can be sent again',
      );
    }
    await tx.query('UPDATE x402_nonces SET escrow_id = $2 WHERE nonce = $1', [a.nonce, escrowId]);
    return { escrowId, proofId: result.proof.id, payer: a.from };
  });
}
