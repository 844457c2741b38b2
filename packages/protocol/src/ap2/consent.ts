// A bundle's AP2 consent (kind `ap2`): the Payment Mandate chain an escrow was created under, re-verified offline against issuer keys the auditor pins and bound to the proof and its escrow.created entry (the AP2 guide (ap2.md in the repository docs) §6); Web APIs only.
import { toHex } from '../crypto/bytes.ts';
import type { Bundle, Check, PartySignature, TrailEntry } from '../types.ts';
import { ap2Issuers, splitChain, verifyOpenCheckout, verifyPaymentChain, type Ap2Issuers } from './chain.ts';
import { b64uDecode, jwkPublicKey, jwkThumbprint, publicJwk } from './jose.ts';
import { microToMinor, minorExponent } from './constraints.ts';
import { Ap2Refusal, delegateItem, resolveDisclosures } from './sdjwt.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What escrow.created records of an AP2 authority: {openHash, closedHash, transactionId}, or undefined. */
export function ap2Record(trail: ReadonlyArray<TrailEntry>): Obj | undefined {
  const body = trail[0]?.event === 'escrow.created' && isObj(trail[0].body) ? trail[0].body : {};
  return isObj(body.ap2) ? body.ap2 : undefined;
}

/** The hex RFC 7638 thumbprint of a P-256 point: the `publicKey` of an ap2 consent (the agent key that signed the closed mandate). */
export const agentKeyId = (point: Uint8Array) => toHex(b64uDecode(jwkThumbprint(publicJwk(point))));

/** Micro-units of a decimal amount string, or null. */
function micro(v: string): bigint | null {
  const m = /^(\d{1,18})(?:\.(\d{1,6}))?$/.exec(v);
  return m ? BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0')) : null;
}

function pinned(ap2IssuersOpt: unknown): Ap2Issuers | null {
  if (ap2IssuersOpt === undefined) return null;
  if (ap2IssuersOpt instanceof Map) return ap2IssuersOpt as Ap2Issuers;
  return ap2Issuers(ap2IssuersOpt, 'ap2Issuers');
}

/**
 * Why `s` (kind ap2) is not this matter's verified AP2 authority, or null. The chain must verify
 * with a pinned issuer key at the time escrow.created records (no nonce or audience offline: those
 * were the service's to check once); its closed token's hash must be proof.mandateHash and, with its
 * open token's and its transaction_id, what escrow.created recorded; its amount, currency and payee
 * must be the proof's; `publicKey` and `signature` must be the agent key and its signature in the chain.
 */
function problem(s: PartySignature, b: Bundle, issuers: Ap2Issuers): string | null {
  const body = s.signedBody;
  if (!isObj(body) || typeof body.paymentMandate !== 'string') return 'signedBody must be {paymentMandate, checkoutMandate?}';
  if (s.trailIndex !== 0 || b.trail[0]?.event !== 'escrow.created') return 'an ap2 consent is bound to trail entry 0 (escrow.created)';
  const at = Date.parse(b.trail[0].at);
  const now = Math.floor(at / 1000);
  const v = verifyPaymentChain(body.paymentMandate, { issuers, now });
  if (body.checkoutMandate !== undefined) {
    if (typeof body.checkoutMandate !== 'string') return 'signedBody.checkoutMandate must be a string';
    verifyOpenCheckout(body.checkoutMandate, issuers, now);
  }
  const { proof } = b;
  if (v.closedHash !== proof.mandateHash) return "sha256 of the presented closed mandate is not the proof's mandateHash";
  const rec = ap2Record(b.trail);
  const tx = v.closed.transaction_id;
  if (!rec || rec.openHash !== v.openHash || rec.closedHash !== v.closedHash || rec.transactionId !== tx)
    return 'escrow.created does not record this chain ({openHash, closedHash, transactionId})';
  const pa = v.closed.payment_amount as Obj;
  const exp = typeof pa?.currency === 'string' ? minorExponent(pa.currency) : null;
  const amount = micro(proof.amount);
  if (exp === null || pa.currency !== proof.asset || amount === null || BigInt(pa.amount as number) !== microToMinor(amount, exp))
    return `the closed mandate pays ${String(pa?.amount)} ${String(pa?.currency)} (minor units), not the proof's ${proof.amount} ${proof.asset}`;
  if ((v.closed.payee as Obj)?.id !== proof.payee) return "the closed mandate's payee.id is not the proof's payee";
  const [, closedTok] = splitChain(body.paymentMandate);
  if (s.signature !== closedTok.jwt.split('.')[2]) return "signature is not the agent's signature on the closed mandate";
  const cnfPoint = jwkPublicKey((v.open.cnf as { jwk: unknown }).jwk);
  if (s.publicKey !== agentKeyId(cnfPoint)) return "publicKey is not the thumbprint of the agent key the open mandate's cnf names";
  return null;
}

/** One check for a carried ap2 consent: `parties[i].ap2`. Without pinned AP2 issuer keys it fails, saying how to pin them. */
export function ap2ConsentCheck(s: PartySignature, i: number, b: Bundle, ap2IssuersOpt: unknown): Check {
  const name = `parties[${i}].ap2`;
  try {
    const issuers = pinned(ap2IssuersOpt);
    if (!issuers)
      return {
        name,
        ok: false,
        detail:
          "the matter's authority is an AP2 Payment Mandate: pin the AP2 issuers' keys (ap2Issuers: a JWKS; the CLI's --ap2-issuers FILE) to verify it",
      };
    const why = problem(s, b, issuers);
    return why
      ? { name, ok: false, detail: `ap2 chain does not belong to this matter: ${why}` }
      : {
          name,
          ok: true,
          detail: `ap2 chain verifies with a pinned issuer key, and its closed mandate (signed by agent key ${s.publicKey}) is the proof's mandateHash and escrow.created's record`,
        };
  } catch (err) {
    const e = err as Error;
    return {
      name,
      ok: false,
      detail: e instanceof Ap2Refusal ? `ap2 chain does not verify: ${e.field}: ${e.message}` : `could not be checked: ${e.message}`,
    };
  }
}

/** The `parties.signatures` entry of a chain the service accepted: kind ap2, bound to escrow.created (the AP2 guide (ap2.md in the repository docs) §6). */
export function ap2Consent(paymentMandate: string, checkoutMandate?: string | null): PartySignature {
  const [openTok, closedTok] = splitChain(paymentMandate);
  const open = delegateItem(resolveDisclosures(openTok, 'open mandate'), 'open mandate');
  const cnf = jwkPublicKey((open.cnf as { jwk: unknown }).jwk);
  return {
    kind: 'ap2',
    trailIndex: 0,
    publicKey: agentKeyId(cnf),
    signedBody: { paymentMandate, ...(checkoutMandate ? { checkoutMandate } : {}) },
    signature: closedTok.jwt.split('.')[2],
  };
}
