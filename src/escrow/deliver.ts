// Delivery: the payee's signed submission, verified synchronously against the terms; a passing
// verdict closes the matter in the same transaction (docs/protocol.md §5).
import { commandTx } from './deps.ts';
import type { CommandDeps } from '../commandDeps.ts';
import { newId } from '../crypto/ids.ts';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { sha256 } from '@escrow-settlement/protocol/crypto/hash';
import { toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { verifyHex } from '@escrow-settlement/protocol/crypto/ed25519';
import { badRequest, invalidState, notFound, unprocessable } from '../errors.ts';
import { extend } from '@escrow-settlement/protocol/trail/chain';
import { lockEscrowWith, advanceEscrow } from './escrowRow.ts';
import { heldSigner } from '../crypto/signer.ts';
import { transition } from './states.ts';
import { evaluateChecks, type CheckResult, type TermCheck } from '../terms/checks.ts';
import { closeMatter } from './close.ts';
import { fuse } from '../db/fuse.ts';
import type { Proof } from '../proof/proof.ts';
import { formatAmount } from '../units/amounts.ts';
import { deliverySigningBody } from '../proof/signedBodies.ts';
import type { Fee } from './escrowRow.ts';

export const MAX_SKEW_MS = 300_000;

/**
 * A delivery. `amount` (micro-units, > 0, at most the escrow's amount): a partial capture
 * (docs/protocol.md §24.2): a passing verdict releases it (less the fee) and returns the rest to the
 * payer in the same closing; the client form then signs JCS {escrowId, contentHash, submittedAt, amount}
 * (amount as the decimal string). Absent: the whole amount, and the signed body has no `amount`.
 */
export type DeliveryInput = (
  | { form: 'sandbox'; agentId: string; payload: unknown; amount?: bigint }
  | { form: 'client'; payload: unknown; submittedAt: string; signature: { signer: string; signature: string }; amount?: bigint }
) & {
  /**
   * A fee chosen at delivery (an x402 capture's `feeBps` with its recipient, docs/protocol.md §24.1),
   * for an escrow created without one: it applies to this closing and any later one, and
   * delivery.submitted records it. Not part of the payee's signed body. An escrow that already has a
   * fee refuses it (409 invalid_state).
   */
  fee?: Fee;
};

export interface DeliveryResult {
  delivery: Record<string, unknown>;
  verdict: Record<string, unknown>;
  proof?: Proof;
}

export { deliverySigningBody } from '../proof/signedBodies.ts';

export function canonicalPayload(payload: unknown): string {
  try {
    return canonicalize(payload);
  } catch (e) {
    throw badRequest(`payload cannot be canonicalised (RFC 8785): ${(e as Error).message}`);
  }
}

export async function submitDelivery(svc: CommandDeps, escrowId: string, input: DeliveryInput): Promise<DeliveryResult> {
  const jcs = canonicalPayload(input.payload);
  // Encoded once: the hash and the size are of the same bytes.
  const bytes = utf8(jcs);
  const contentHash = toHex(sha256(bytes));
  const sizeBytes = bytes.byteLength;
  const txOpts = commandTx(svc, [`escrow:${escrowId}`]);
  return svc.db.tx(async (tx) => {
    // The sandbox agent's key is read by the escrow lock's own statement.
    const { e, agent } = await lockEscrowWith(tx, escrowId, input.form === 'sandbox' ? input.agentId : undefined);
    let agentKey: { publicKey: string; secretKey: string } | undefined;
    if (input.form === 'sandbox') {
      if (!agent) throw notFound(`agentId: no agent ${input.agentId}`);
      agentKey = agent;
    }
    if (e.deliveryId) throw invalidState(`a delivery was already submitted for this escrow (state ${e.state})`);
    transition('deliver', e);
    const claimed = input.amount;
    if (claimed !== undefined && (claimed <= 0n || claimed > e.amount))
      throw badRequest(`amount ${formatAmount(claimed)} must be greater than 0 and at most the escrow's amount ${formatAmount(e.amount)}`);
    if (input.fee && e.fee) throw invalidState('this escrow already has a fee; a delivery cannot choose another');
    const fee = input.fee ?? e.fee;
    const at = e.now.toISOString();
    let submittedAt: string;
    let signature: { signer: string; signature: string };
    if (input.form === 'sandbox') {
      if (agentKey!.publicKey !== e.payee.publicKey) throw unprocessable(`agentId: agent ${input.agentId} is not this escrow's payee`);
      submittedAt = at;
      // Signed here with the held key (public half derived once per key); not verified again.
      const signer = heldSigner(agentKey!.secretKey);
      signature = {
        signer: agentKey!.publicKey,
        signature: toHex(signer.sign(utf8(canonicalize(deliverySigningBody(escrowId, contentHash, submittedAt, claimed))))),
      };
    } else {
      if (input.signature.signer !== e.payee.publicKey) throw unprocessable("signature.signer is not this escrow's payee key");
      const skew = Math.abs(Date.parse(input.submittedAt) - e.now.getTime());
      if (skew > MAX_SKEW_MS)
        throw unprocessable(`submittedAt is ${Math.round(skew / 1000)} s from the service clock; at most 300 s is accepted`);
      const body = utf8(canonicalize(deliverySigningBody(escrowId, contentHash, input.submittedAt, claimed)));
      if (!verifyHex(input.signature.signature, body, e.payee.publicKey)) {
        throw unprocessable(
          `signature.signature does not verify over JCS {escrowId, contentHash, submittedAt${claimed === undefined ? '' : ', amount'}} with the payee key`,
        );
      }
      submittedAt = input.submittedAt;
      signature = input.signature;
    }
    const deliveryId = newId('dlv');
    const verdictId = newId('vrd');
    const checks = e.terms.checks as TermCheck[];
    const evaluation = evaluateChecks(checks, {
      payload: input.payload,
      contentHash,
      sizeBytes,
      receivedAt: e.now,
      amount: claimed ?? e.amount,
    });
    const failedKinds = evaluation.results.filter((r: CheckResult) => !r.passed).map((r: CheckResult) => r.check.kind);
    const delivery = {
      id: deliveryId,
      escrowId,
      contentHash,
      payload: input.payload,
      submittedAt,
      signature,
      ...(claimed !== undefined ? { amount: formatAmount(claimed) } : {}),
    };
    const verdict = { id: verdictId, escrowId, deliveryId, passed: evaluation.passed, results: evaluation.results, decidedAt: at };
    const pending = [
      {
        event: 'delivery.submitted',
        body: {
          deliveryId,
          contentHash,
          ...(claimed !== undefined ? { amount: formatAmount(claimed) } : {}),
          ...(input.fee ? { fee: input.fee } : {}),
        },
      },
      {
        event: evaluation.passed ? 'verdict.passed' : 'verdict.failed',
        body: { verdictId, passed: evaluation.passed, failed: failedKinds },
      },
    ];
    const writes = [
      {
        text: 'INSERT INTO deliveries (id, escrow_id, content_hash, payload, size_bytes, submitted_at, signature, amount) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        params: [deliveryId, escrowId, contentHash, jcs, sizeBytes, submittedAt, JSON.stringify(signature), claimed?.toString() ?? null],
      },
      {
        text: 'INSERT INTO verdicts (id, escrow_id, delivery_id, passed, results, decided_at) VALUES ($1, $2, $3, $4, $5, $6)',
        params: [verdictId, escrowId, deliveryId, evaluation.passed, JSON.stringify(evaluation.results), at],
      },
    ];
    if (!evaluation.passed) {
      // Failed verdict: delivered, open for dispute or refund until resolveWithinSeconds passes.
      const entries = extend(e.trailLength, e.trailHead, pending, at);
      const deadlineAt = new Date(e.now.getTime() + e.timeouts.resolveWithinSeconds * 1000);
      await tx.commitWith([
        fuse([
          ...writes,
          ...advanceEscrow(e, entries, { state: 'delivered', deadlineAt, verdict: 'failed', ...(input.fee ? { fee: input.fee } : {}) }),
        ]),
      ]);
      return { delivery, verdict };
    }
    const closed = await closeMatter(tx, svc, {
      e: { ...e, deliveryHash: contentHash, deliveryId, verdictId, deliveryAmount: claimed ?? null, fee },
      setFee: input.fee !== undefined,
      closing: { kind: 'release' },
      pending,
      writes,
      ifFailedState: 'delivered',
      verdict: 'passed',
      last: true,
    });
    // A passing verdict that custody cannot settle: 201 with delivery and verdict, no proof (docs/protocol.md §4.4).
    return closed.ok ? { delivery, verdict, proof: closed.proof } : { delivery, verdict };
  }, txOpts);
}
