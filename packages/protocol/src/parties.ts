// Re-checking the parties' signatures a bundle carries: each verifies over its signed body and is bound to its trail entry and role; none the trail relies on is missing. Web APIs only.
import { canonicalize } from './crypto/jcs.ts';
import { sha256Hex } from './crypto/hash.ts';
import { verifyJson } from './crypto/ed25519.ts';
import type { Bundle, Check, PartySignature, TrailEntry } from './types.ts';
import { ap2ConsentCheck, ap2Record } from './ap2/consent.ts';

/** What the party checks need from the caller: the AP2 issuer keys it pins (a JWKS), for kind ap2. */
export interface PartyOptions {
  ap2Issuers?: unknown;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => canonicalize(a ?? null) === canonicalize(b ?? null);

/** Micro-units of a decimal amount, or null (at most 6 fraction digits). */
function micro(v: unknown): bigint | null {
  const m = typeof v === 'string' ? /^(\d{1,18})(?:\.(\d{1,6}))?$/.exec(v) : null;
  return m ? BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0')) : null;
}

/** The escrow's parties as its escrow.created entry recorded them (the trail is hash-chained to the proof). */
function roles(trail: ReadonlyArray<TrailEntry>): { payer?: string; payee?: string; arbiter?: string } {
  const e = trail[0]?.event === 'escrow.created' && isObj(trail[0].body) && isObj(trail[0].body.escrow) ? trail[0].body.escrow : {};
  const key = (k: string) => (isObj(e[k]) && typeof (e[k] as Obj).publicKey === 'string' ? ((e[k] as Obj).publicKey as string) : undefined);
  return { payer: key('payer'), payee: key('payee'), arbiter: key('arbiter') };
}

/** The event each kind is bound to. */
const EVENT: Record<PartySignature['kind'], string> = {
  mandate: 'escrow.created',
  ap2: 'escrow.created',
  x402: 'escrow.created',
  delivery: 'delivery.submitted',
  'x402.void': 'escrow.refunded',
  'dispute.open': 'dispute.opened',
  'dispute.evidence': 'dispute.evidence',
  ruling: 'dispute.resolved',
  refund: 'refund.issued',
  'refund.request': 'refund.requested',
};

/** What escrow.created records of an x402 collect: sha256 of JCS(the payer's authorization) (the service's protocol documentation, §11.4). */
function collected(trail: ReadonlyArray<TrailEntry>): string | undefined {
  const body = trail[0]?.event === 'escrow.created' && isObj(trail[0].body) ? trail[0].body : {};
  return isObj(body.x402) && typeof body.x402.authorizationHash === 'string' ? body.x402.authorizationHash : undefined;
}

/** What an escrow.refunded entry records of the payee's void, when a void refunded it. */
const voided = (data: Obj): Obj | undefined => (isObj(data.void) ? data.void : undefined);

/** Why an x402 authorization does not match the proof: v2 facilitator form (atomic units, termsHash) or the v1 demo's (decimal). */
function authorizationProblem(body: Obj, s: PartySignature, b: Bundle): string | null {
  const { proof } = b;
  if (body.from !== s.publicKey || s.publicKey !== proof.payer) return "signer is not authorization.from and the proof's payer";
  if (body.to !== proof.payee) return "authorization.to is not the proof's payee";
  if (body.asset !== proof.asset) return "authorization.asset is not the proof's asset";
  const facilitator = 'termsHash' in body;
  const value = facilitator
    ? typeof body.value === 'string' && /^\d{1,24}$/.test(body.value)
      ? BigInt(body.value)
      : null
    : micro(body.value);
  if (value === null || value !== micro(proof.amount))
    return `authorization.value is not the proof's amount ${proof.amount}${facilitator ? ' (in atomic units, 6 decimals)' : ''}`;
  if (facilitator && body.termsHash !== proof.termsHash) return "authorization.termsHash is not the proof's termsHash";
  const recorded = collected(b.trail);
  if (recorded !== undefined && sha256Hex(canonicalize(body)) !== recorded)
    return 'sha256(JCS(authorization)) is not the x402.authorizationHash escrow.created records';
  return null;
}

/** Why `s` does not belong to this matter, or null: its role and its signed content against the proof and trail. */
function bindingProblem(s: PartySignature, b: Bundle): string | null {
  const { proof, trail } = b;
  const entry = trail[s.trailIndex];
  if (!entry) return `trailIndex ${s.trailIndex} is not an entry of the ${trail.length}-entry trail`;
  if (entry.event !== EVENT[s.kind]) return `trail entry ${s.trailIndex} is ${entry.event}, not ${EVENT[s.kind]}`;
  const body = s.signedBody as Obj;
  const data = (isObj(entry.body) ? entry.body : {}) as Obj;
  const r = roles(trail);
  switch (s.kind) {
    case 'ap2':
      return 'checked by ap2ConsentCheck';
    case 'mandate':
      if (body.principal !== s.publicKey) return "signer is not the mandate's principal";
      if (!proof.mandateHash || sha256Hex(canonicalize({ principal: body.principal, caps: body.caps })) !== proof.mandateHash)
        return 'sha256(JCS({principal, caps})) is not proof.mandateHash';
      if (!isObj(body.caps) || body.caps.agent !== proof.payer) return "caps.agent is not the proof's payer";
      return null;
    case 'x402':
      return authorizationProblem(body, s, b);
    case 'x402.void': {
      if (s.publicKey !== proof.payee) return "signer is not the proof's payee";
      if (body.escrowId !== proof.escrowId || body.action !== 'void')
        return `signed body is not {escrowId: ${proof.escrowId}, action: "void", signedAt}`;
      const v = voided(data);
      if (!v) return `trail entry ${s.trailIndex} records no void`;
      if (v.signer !== s.publicKey || v.signature !== s.signature) return 'signer and signature are not the void the trail records';
      return body.signedAt === v.signedAt ? null : "signed signedAt is not the void's the trail records";
    }
    case 'delivery':
      if (s.publicKey !== proof.payee) return "signer is not the proof's payee";
      if (body.escrowId !== proof.escrowId) return "signed escrowId is not the proof's";
      if (body.contentHash !== data.contentHash || (proof.deliveryHash && body.contentHash !== proof.deliveryHash))
        return "signed contentHash is not the delivery's";
      // A partial capture: the payee signed the amount it claimed, which delivery.submitted records.
      if ((body.amount ?? null) !== (data.amount ?? null)) return 'signed amount is not the amount delivery.submitted records';
      return null;
    case 'refund':
    case 'refund.request': {
      if (body.escrowId !== proof.escrowId || body.action !== s.kind)
        return `signed body is not {escrowId: ${proof.escrowId}, action: "${s.kind}", amount, reason, signedAt}`;
      if (data.by !== s.publicKey) return `signer is not the party trail entry ${s.trailIndex} names`;
      if (s.kind === 'refund' && s.publicKey !== r.payee && s.publicKey !== r.arbiter)
        return 'signer is neither the payee nor the named arbiter';
      if (s.kind === 'refund.request' && s.publicKey !== r.payer) return 'signer is not the payer';
      if (body.amount !== data.amount || (body.reason ?? '') !== (data.reason ?? '') || body.signedAt !== data.signedAt)
        return `signed amount, reason or signedAt is not what trail entry ${s.trailIndex} records`;
      return null;
    }
    case 'dispute.open':
    case 'dispute.evidence': {
      if (body.escrowId !== proof.escrowId || body.action !== s.kind)
        return `signed body is not {escrowId: ${proof.escrowId}, action: "${s.kind}", …}`;
      const actor = s.kind === 'dispute.open' ? data.openedBy : data.party;
      if (s.publicKey !== actor)
        return `signer is not the ${s.kind === 'dispute.open' ? 'opener' : 'party'} trail entry ${s.trailIndex} names`;
      if (s.kind === 'dispute.open') return (body.reason ?? '') === data.reason ? null : "signed reason is not the dispute's";
      const hash = typeof body.contentHash === 'string' ? body.contentHash : sha256Hex(canonicalize(body.note ?? ''));
      return hash === data.contentHash ? null : "signed contentHash (or the note's hash) is not the evidence's";
    }
    case 'ruling':
      if (body.escrowId !== proof.escrowId || body.disputeId !== data.disputeId) return "signed escrowId/disputeId are not the ruling's";
      if (body.outcome !== data.outcome || !same(body.shares, data.shares))
        return 'signed outcome/shares are not the ruling the trail records';
      if (![r.payer, r.payee, r.arbiter].includes(s.publicKey)) return 'signer is neither payer, payee nor the named arbiter';
      return null;
  }
}

function one(s: PartySignature, i: number, b: Bundle, opts: PartyOptions): Check {
  // An AP2 chain carries its own ES256 signatures (./ap2/consent.ts).
  if (s.kind === 'ap2') return ap2ConsentCheck(s, i, b, opts.ap2Issuers);
  const name = `parties[${i}].${s.kind}`;
  try {
    if (!verifyJson(s.signedBody, s.signature, s.publicKey)) {
      return { name, ok: false, detail: `${s.kind} signature does not verify over JCS(signedBody) with ${s.publicKey}` };
    }
    const problem = bindingProblem(s, b);
    return problem
      ? { name, ok: false, detail: `${s.kind} signature verifies but does not belong to this matter: ${problem}` }
      : {
          name,
          ok: true,
          detail: `${s.kind} signature by ${s.publicKey} verifies and is bound to trail entry ${s.trailIndex} (${EVENT[s.kind]})`,
        };
  } catch (err) {
    return { name, ok: false, detail: `could not be checked: ${(err as Error).message}` };
  }
}

/** The first signature the trail shows the service relied on that the bundle lacks, or null. */
function missing(b: Bundle, sigs: PartySignature[]): string | null {
  const has = (kind: PartySignature['kind'], index: number, key?: string) =>
    sigs.some((s) => s.kind === kind && s.trailIndex === index && (key === undefined || s.publicKey === key));
  const authority = ap2Record(b.trail) ? 'ap2' : 'mandate';
  if (b.proof.mandateHash && !sigs.some((s) => s.kind === authority))
    return `the proof names a mandateHash but no ${authority === 'ap2' ? 'ap2 chain' : 'mandate signature'} is carried`;
  const r = roles(b.trail);
  if (collected(b.trail) !== undefined && !has('x402', 0, r.payer))
    return "trail entry 0 (escrow.created) records an x402 collect but the payer's x402 authorization is not carried";
  for (const e of b.trail) {
    const data = (isObj(e.body) ? e.body : {}) as Obj;
    if (e.event === 'escrow.refunded' && voided(data) && !has('x402.void', e.index, r.payee))
      return `trail entry ${e.index} (escrow.refunded by a void) has no x402.void signature of the payee`;
    if (e.event === 'delivery.submitted' && !has('delivery', e.index))
      return `trail entry ${e.index} (delivery.submitted) has no delivery signature`;
    if (e.event === 'dispute.opened' && !has('dispute.open', e.index))
      return `trail entry ${e.index} (dispute.opened) has no dispute.open signature`;
    if (e.event === 'dispute.evidence' && !has('dispute.evidence', e.index))
      return `trail entry ${e.index} (dispute.evidence) has no dispute.evidence signature`;
    if (e.event === 'refund.issued' && !has('refund', e.index, typeof data.by === 'string' ? data.by : undefined))
      return `trail entry ${e.index} (refund.issued) has no refund signature of its signer`;
    if (e.event === 'refund.requested' && !has('refund.request', e.index, r.payer))
      return `trail entry ${e.index} (refund.requested) has no refund.request signature of the payer`;
    if (e.event === 'dispute.resolved') {
      const need =
        data.decidedBy === 'co-signature'
          ? [
              ['payer', r.payer],
              ['payee', r.payee],
            ]
          : data.decidedBy === 'arbiter'
            ? [['arbiter', r.arbiter]]
            : [];
      for (const [role, key] of need) {
        if (!key || !has('ruling', e.index, key))
          return `trail entry ${e.index} (dispute.resolved by ${String(data.decidedBy)}) has no ruling signature of the ${role}`;
      }
    }
  }
  return null;
}

/**
 * One check per carried signature (`parties[i].<kind>`), then `parties.complete`: every signature
 * the trail shows the service relied on is carried. A bundle without `parties` (from a service that did
 * not carry them yet) carries none, so it passes only for matters that relied on no party signature.
 */
export function partyChecks(b: Bundle, opts: PartyOptions = {}): Check[] {
  const sigs = b.parties?.signatures ?? [];
  const checks = sigs.map((s, i) => one(s, i, b, opts));
  const gap = missing(b, sigs);
  checks.push(
    gap
      ? { name: 'parties.complete', ok: false, detail: gap }
      : { name: 'parties.complete', ok: true, detail: `every party signature the trail relies on is carried (${sigs.length})` },
  );
  return checks;
}
