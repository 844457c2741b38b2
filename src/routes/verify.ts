// POST /v1/verify: anyone can check a proof document's issuer signature and key era (docs/protocol.md §11.2).
import { enums, integer, object, optional, size, string } from 'superstruct';
import { badRequest } from '../errors.ts';
import { defineRoutes } from '../http/route.ts';
import { json } from '../http/respond.ts';
import { MAX_VERIFY_BODY, readJson } from '../http/body.ts';
import { amountOrZero, amountStr, asset, check, hex64, idOf, sigHex, timestamp } from '../validate.ts';
import { issuerKeys } from '../proof/keys.ts';
import { verifyJson } from '@escrow-settlement/protocol/crypto/ed25519';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { proofBody } from '@escrow-settlement/protocol/verify';
import type { Proof } from '@escrow-settlement/protocol/types';
import type { DocumentVerification } from '@escrow-settlement/protocol/resources';

const bps = size(integer(), 0, 10_000);
const anchorPart = size(string(), 1, 256);

/**
 * A full proof document (docs/protocol.md §11.1), strictly: an unknown field is a 400 naming it
 * (docs/protocol.md §2.6), so "not a proof" is never confused with "a proof whose signature fails".
 */
export const ProofDoc = object({
  id: idOf('prf'),
  escrowId: idOf('esc'),
  outcome: enums(['released', 'refunded', 'split', 'refunded-after-release']),
  payer: hex64,
  payee: hex64,
  amount: amountStr,
  asset,
  termsHash: hex64,
  deliveryHash: optional(hex64),
  verdictId: optional(idOf('vrd')),
  disputeId: optional(idOf('dsp')),
  mandateHash: optional(hex64),
  shares: optional(object({ payerBps: bps, payeeBps: bps })),
  // Money after the verdict (docs/protocol.md §24): a partial capture, the fee, the payouts; an adjustment's fields.
  captured: optional(amountStr),
  fee: optional(object({ bps, recipient: hex64, amount: amountOrZero })),
  payouts: optional(object({ payee: amountOrZero, payer: amountOrZero, fee: amountOrZero })),
  adjusts: optional(idOf('prf')),
  refundedTotal: optional(amountStr),
  reason: optional(size(string(), 0, 4000)),
  trailHead: hex64,
  trailLength: size(integer(), 0, 2_147_483_647),
  issuedAt: timestamp,
  anchor: optional(object({ chain: anchorPart, contract: anchorPart, escrowRef: anchorPart, txHash: anchorPart })),
  signature: object({ signer: hex64, signature: sigHex }),
});

/** The answer's wire shape is the client's DocumentVerification. */
export type VerifyResponse = DocumentVerification;

export const verifyRoutes = defineRoutes({ tag: 'proofs', access: 'public', rate: 'verify' }, [
  {
    route: 'POST /v1/verify',
    summary:
      "Checks a proof document: the issuer signature over its canonical body, and whether the signer is one of this deployment's published issuer key eras. Trail intactness is not checked here.",
    body: ProofDoc,
    success: {
      status: 200,
      description: '{valid, signatureValid, issuerKnown, issuer, keyId?, validFrom?, validUntil?, issuedWithinEra?, anchor?}',
    },
    errors: ['bad_request', 'payload_too_large', 'rate_limited'],
    async handler({ request, svc }) {
      const raw = await readJson(request, MAX_VERIFY_BODY);
      check(raw, ProofDoc);
      // Verify the document exactly as sent, not the validator's output: the signature is over its bytes' JCS.
      const proof = raw as Proof;
      try {
        canonicalize(proof);
      } catch (e) {
        throw badRequest(`request body ${(e as Error).message.replace(/^cannot canonicalize/, 'cannot be canonicalized: it holds')}`);
      }
      const issuer = proof.signature.signer;
      const signatureValid = verifyJson(proofBody(proof), proof.signature.signature, issuer);
      const era = (await issuerKeys(svc.db)).find((k) => k.publicKey === issuer);
      const out: VerifyResponse = { valid: signatureValid && era !== undefined, signatureValid, issuerKnown: era !== undefined, issuer };
      if (era) {
        const at = Date.parse(proof.issuedAt);
        out.keyId = era.keyId;
        out.validFrom = era.validFrom;
        if (era.validUntil) out.validUntil = era.validUntil;
        // Informational: an era is [validFrom, validUntil); validity of the proof rests on the signature and the key.
        out.issuedWithinEra = at >= Date.parse(era.validFrom) && (era.validUntil === undefined || at < Date.parse(era.validUntil));
      }
      if (proof.anchor) out.anchor = proof.anchor;
      return json(out);
    },
  },
]);
