// Collect: the payer's signed authorization becomes one funded escrow (docs/x402.md "Collect").
// verifyCollect reads and writes nothing but its checks; settleCollect creates the escrow through
// the REST API's own commands (createEscrow, then fundEscrow), idempotent per (payTo, nonce).
import type { Services } from '../../services.ts';
import type { Caller } from '../../http/route.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256Hex } from '@escrow-settlement/protocol/crypto/hash';
import { utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { AppError } from '../../errors.ts';
import { sqlState, UNIQUE_VIOLATION } from '../../db/types.ts';
import { createEscrow, fundEscrow } from '../../escrow/escrows.ts';
import { getEscrow } from '../../escrow/escrowRow.ts';
import { scopeOf } from '../../access/tenancy.ts';
import { checkMandateCaps, type MandateCaps } from '../../mandate/mandateCaps.ts';
import { partySignatureWrite } from '../../escrow/partySignatures.ts';
import { asRefusal, refuse } from './refusal.ts';
import { escrowTimeouts, type Checked } from './requirements.ts';
import { BOUND_FIELDS, type Collect } from './wire.ts';
import type { Timeouts } from '../../escrow/escrowRow.ts';

/** A signature's clock may run a little ahead of the service's: validBefore gets this much slack. */
const VALID_BEFORE_SLACK_MS = 30_000;

export interface CollectAnswer {
  success: true;
  transaction: string;
  network: string;
  payer: string;
  amount: string;
  extra: { escrowId: string };
}

type PaymentRow = { payload_hash: string; escrow_id: string; payer: string; network: string; amount: string };

/** The fingerprint of one collect: a used nonce with another fingerprint is another payment. */
export const collectHash = (c: Checked, body: Collect) =>
  sha256Hex(canonicalize({ authorization: body.authorization, signature: body.signature, requirements: c.requirements }));

async function recorded(svc: Services, payTo: string, nonce: string): Promise<PaymentRow | undefined> {
  const [row] = await svc.db.query<PaymentRow>(
    'SELECT payload_hash, escrow_id, payer, network, amount FROM x402_payments WHERE pay_to = $1 AND nonce = $2',
    [payTo, nonce],
  );
  return row;
}

/**
 * Every check of the collect authorization against the requirements, the clock and the mandates,
 * in the order x402 facilitators check them; throws a Refusal. Returns the mandate that applies.
 */
export async function checkCollect(
  svc: Services,
  scope: string | null,
  c: Checked,
  body: Collect,
): Promise<{ mandateId?: string; timeouts: Timeouts }> {
  const a = body.authorization;
  const r = c.requirements;
  if (a.to !== r.payTo) throw refuse('wrong_payee', 'authorization.to is not paymentRequirements.payTo');
  if (a.asset !== r.asset) throw refuse('wrong_asset', 'authorization.asset is not paymentRequirements.asset');
  if (a.value !== r.amount)
    throw refuse(
      'payment_invalid',
      `authorization.value must be paymentRequirements.amount (${r.amount} atomic units), got ${JSON.stringify(a.value).slice(0, 40)}`,
    );
  if (c.resourceUrl === undefined)
    throw refuse('malformed_header', 'paymentPayload.resource.url is required: the authorization binds the resource');
  if (a.resource !== c.resourceUrl) throw refuse('wrong_resource', 'authorization.resource is not paymentPayload.resource.url');
  if (a.termsHash !== c.termsHash)
    throw refuse(
      'terms_mismatch',
      'authorization.termsHash is not sha256 of JCS(paymentRequirements.extra.terms): the payer agreed to other terms',
    );
  // Fee bounds and deadlines are the payer's to agree to: present in the requirements, the
  // authorization carries them (and only then), so its signature covers them.
  for (const f of BOUND_FIELDS) {
    if (a[f] !== r.extra[f]) {
      const want = r.extra[f] === undefined ? 'absent, as paymentRequirements.extra has none' : JSON.stringify(r.extra[f]);
      throw refuse('payment_invalid', `authorization.${f} must be paymentRequirements.extra.${f} (${want}), got ${JSON.stringify(a[f])}`);
    }
  }
  if (!verifyHex(body.signature, utf8(canonicalize(a)), a.from))
    throw refuse('bad_signature', 'signature does not verify with authorization.from over JCS(authorization)');
  if (a.from === r.payTo || (r.extra.arbiter !== undefined && (r.extra.arbiter === a.from || r.extra.arbiter === r.payTo))) {
    throw refuse('payment_invalid', 'payer, payee and arbiter must be three different keys');
  }
  const [{ now }] = await svc.db.query<{ now: Date }>('SELECT svc_now() AS now');
  const validBefore = Date.parse(a.validBefore);
  if (validBefore <= now.getTime()) throw refuse('payment_invalid', `authorization.validBefore (${a.validBefore}) has passed`);
  if (validBefore > now.getTime() + r.maxTimeoutSeconds * 1000 + VALID_BEFORE_SLACK_MS) {
    throw refuse('payment_invalid', `authorization.validBefore is more than maxTimeoutSeconds (${r.maxTimeoutSeconds} s) away`);
  }
  if (c.fee && c.fee.maxBps > 0 && svc.custody.kind !== 'simulated')
    throw refuse(
      'payment_invalid',
      `paymentRequirements.extra.maxFeeBps: this service's ${svc.custody.kind} custody pays the payer and the payee only; a fee needs simulated custody`,
    );
  const timeouts = escrowTimeouts(c, now);
  return { ...(await mandateFor(svc, scope, c, a.from, r.payTo, now)), timeouts };
}

/**
 * The mandate a payer is under (docs/x402.md "Mandates"): among the mandates binding `from` as
 * their agent that the caller may use (a confined key: those it registered, docs/protocol.md §18.3),
 * the oldest whose caps allow this payment; none allowing it is a refusal naming the first one's
 * broken cap. Another key's mandate is never bound, drawn down or named. createEscrow checks it
 * again, atomically with the insert.
 */
async function mandateFor(
  svc: Services,
  scope: string | null,
  c: Checked,
  payer: string,
  payee: string,
  now: Date,
): Promise<{ mandateId?: string }> {
  const rows = await svc.db.query<{ id: string; caps: string; spent: string }>(
    scope === null
      ? `SELECT id, caps, spent::text AS spent FROM mandates WHERE (caps::json ->> 'agent') = $1 ORDER BY created_at, id`
      : `SELECT m.id, m.caps, m.spent::text AS spent FROM mandates m JOIN mandate_tenants t ON t.mandate_id = m.id AND t.key_id = $2
         WHERE (m.caps::json ->> 'agent') = $1 ORDER BY m.created_at, m.id`,
    scope === null ? [payer] : [payer, scope],
  );
  let first: AppError | undefined;
  for (const m of rows) {
    try {
      checkMandateCaps(JSON.parse(m.caps) as MandateCaps, {
        payer,
        payee,
        amount: c.amount,
        asset: c.requirements.asset,
        now,
        spent: BigInt(m.spent),
      });
      return { mandateId: m.id };
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      first ??= err;
    }
  }
  if (first) throw refuse('payment_invalid', `mandate: ${first.message}`);
  return {};
}

/** /verify for a collect: the checks and the nonce, nothing written. */
export async function verifyCollect(svc: Services, caller: Caller, c: Checked, body: Collect): Promise<void> {
  await checkCollect(svc, scopeOf(caller), c, body);
  if (await recorded(svc, c.requirements.payTo, body.authorization.nonce))
    throw refuse('payment_invalid', 'authorization.nonce was already used: a payment settles once');
}

/**
 * /settle for a collect. The escrow and its payment record commit together; funding follows as
 * its own command. A repeated collect (a retry after a timeout or a crash) finds the record, funds
 * the escrow if the first attempt died before funding, and answers as the first did.
 */
export async function settleCollect(svc: Services, caller: Caller, c: Checked, body: Collect): Promise<CollectAnswer> {
  const a = body.authorization;
  const payTo = c.requirements.payTo;
  const hash = collectHash(c, body);
  let row = await recorded(svc, payTo, a.nonce);
  if (!row) {
    const { mandateId, timeouts } = await checkCollect(svc, scopeOf(caller), c, body);
    try {
      await createEscrow(svc, {
        amount: c.amount,
        asset: c.requirements.asset,
        terms: c.terms,
        payer: { keyRef: { publicKey: a.from } },
        payee: { keyRef: { publicKey: payTo } },
        arbiter: c.requirements.extra.arbiter !== undefined ? { keyRef: { publicKey: c.requirements.extra.arbiter } } : undefined,
        mandateId,
        timeouts,
        // The bound refundDeadline ends the escrow's refund window, whenever the capture closes it.
        ...(c.refundDeadline !== undefined ? { refundBy: new Date(c.refundDeadline) } : {}),
        scope: scopeOf(caller),
        // The payer's consent: escrow.created records its hash, the bundle carries it (docs/protocol.md §11.4).
        createdWith: { x402: { authorizationHash: sha256Hex(canonicalize(a)) } },
        alsoWrite: (escrowId, now) => [
          {
            text: 'INSERT INTO x402_payments (pay_to, nonce, payload_hash, escrow_id, payer, network, amount, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
            params: [payTo, a.nonce, hash, escrowId, a.from, c.requirements.network, c.requirements.amount, now],
          },
          partySignatureWrite(escrowId, [{ kind: 'x402', trailIndex: 0, publicKey: a.from, signedBody: a, signature: body.signature }]),
        ],
      });
    } catch (err) {
      // A concurrent collect of the same (payTo, nonce) committed first: answer as it does.
      if (sqlState(err) !== UNIQUE_VIOLATION) throw asRefusal(err);
    }
    row = await recorded(svc, payTo, a.nonce);
    if (!row) throw new Error('x402 collect: the payment record is missing after its escrow committed');
  }
  if (row.payload_hash !== hash)
    throw refuse('payment_invalid', 'authorization.nonce was already used by another payment: a payment settles once');
  // Hosted: a key that cannot see the escrow learns nothing of it, not even its id.
  const scope = scopeOf(caller);
  if (
    scope !== null &&
    (await svc.db.query('SELECT 1 FROM escrow_tenants WHERE escrow_id = $1 AND key_id = $2', [row.escrow_id, scope])).length === 0
  ) {
    throw refuse('payment_invalid', 'authorization.nonce was already used: a payment settles once');
  }
  await ensureFunded(svc, row.escrow_id);
  return {
    success: true,
    transaction: row.escrow_id,
    network: row.network,
    payer: row.payer,
    amount: row.amount,
    extra: { escrowId: row.escrow_id },
  };
}

/** Funds a collect's escrow still in `created` (its first collect died between the two commands). */
async function ensureFunded(svc: Services, escrowId: string): Promise<void> {
  const e = await getEscrow(svc.db, escrowId);
  if (e.state !== 'created') return;
  try {
    await fundEscrow(svc, escrowId);
  } catch (err) {
    // Another retry funded it in between: the state moved on, which is all this wanted.
    if (err instanceof AppError && err.code === 'invalid_state') return;
    throw asRefusal(err);
  }
}
