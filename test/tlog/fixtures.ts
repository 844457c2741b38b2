// Log test fixtures: synthetic proofs issued as a closing would issue them, a naive RFC 6962 reference, node:crypto checks.
import { createHash, createPublicKey, generateKeyPairSync, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { newId } from '../../src/crypto/ids.ts';
import type { Db, Queryable } from '../../src/db/types.ts';
import { activeKey, issuerSigner } from '../../src/proof/keys.ts';
import { toHex, utf8 } from '@escrow-settlement/protocol/crypto/bytes';
import { sequenceLeaf } from '../../src/tlog/sequence.ts';
import { integrateBatch } from '../../src/tlog/integrate.ts';
import { issuerHeadKeys } from '../../src/proof/keys.ts';
import { recordIndices } from '../../src/proof/proofLog.ts';
import type { Proof, TrailEntry } from '@escrow-settlement/protocol/types';

export const sha256 = (...parts: Array<Uint8Array | string>): Buffer => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));

/** Naive RFC 6962 §2.1 MTH over leaf hashes, straight from the definition. */
export function naiveRoot(leafHashes: Uint8Array[]): Buffer {
  const n = leafHashes.length;
  if (n === 0) return sha256(new Uint8Array(0));
  if (n === 1) return Buffer.from(leafHashes[0]);
  let k = 1;
  while (k * 2 < n) k *= 2;
  return sha256(new Uint8Array([1]), naiveRoot(leafHashes.slice(0, k)), naiveRoot(leafHashes.slice(k)));
}

/** Leaf hash computed independently of the service: SHA-256(0x00 || JCS(proof)) (docs/protocol.md §12.1). */
export const leafHashOf = (proof: unknown): string => hex(sha256(new Uint8Array([0]), canonicalize(proof)));

/** Ed25519 verification by node:crypto, an implementation independent of the service's. */
export function nodeVerifyHex(publicKeyHex: string, message: string, signatureHex: string): boolean {
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKeyHex, 'hex').toString('base64url') },
    format: 'jwk',
  });
  return nodeVerify(null, Buffer.from(message), key, Buffer.from(signatureHex, 'hex'));
}

/** A signing key outside the service, as node:crypto makes it. */
export function outsideKey() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' }) as { x: string };
  return {
    publicKey: Buffer.from(jwk.x, 'base64url').toString('hex'),
    sign: (value: unknown) => nodeSign(null, Buffer.from(canonicalize(value)), privateKey).toString('hex'),
  };
}

/** A hash chain of `n` entries (docs/protocol.md §10), computed with node:crypto. */
export function makeTrail(n: number, at: string): TrailEntry[] {
  const out: TrailEntry[] = [];
  let prevHash = '0'.repeat(64);
  for (let index = 0; index < n; index++) {
    const base = { index, prevHash, at, event: `event.${index}`, body: { n: index, note: 'synthetic' } };
    const hash = hex(sha256(canonicalize(base)));
    out.push({ ...base, hash });
    prevHash = hash;
  }
  return out;
}

export interface Issued {
  proof: Proof;
  leafIndex: number;
  leafHash: string;
  trail: TrailEntry[];
}

type Signer = { publicKey: string; sign: (v: unknown) => string };

async function serviceSigner(q: Queryable): Promise<Signer> {
  const key = await activeKey(q, 'issuer');
  const held = await issuerSigner(q, key.keyId);
  return { publicKey: key.publicKey, sign: (v) => toHex(held.sign(utf8(canonicalize(v)))) };
}

/**
 * Issues one synthetic proof the way a closing does, in one transaction: a minimal escrow row, its
 * trail (trailLength entries plus the proof.issued entry), the signed proof, its leaf and its row.
 */
export async function issueSynthetic(
  db: Db,
  opts: { trailLength?: number; signer?: Signer; extra?: Partial<Proof> } = {},
): Promise<Issued> {
  const issued = await db.tx(async (tx) => {
    const escrowId = newId('esc');
    const [{ now }] = await tx.query<{ now: Date }>('SELECT svc_now() AS now');
    const at = now.toISOString();
    const n = opts.trailLength ?? 3;
    const trail = makeTrail(n + 1, at);
    const head = trail[n - 1];
    const signer = opts.signer ?? (await serviceSigner(tx));
    // Terms with no checks: the bundle carries them and their hash is the proof's termsHash.
    const terms = canonicalize({ description: 'synthetic', checks: [] });
    const body = {
      id: newId('prf'),
      escrowId,
      outcome: 'released' as const,
      payer: 'a'.repeat(64),
      payee: 'b'.repeat(64),
      amount: '10',
      asset: 'USDC',
      termsHash: hex(sha256(terms)),
      trailHead: head.hash,
      trailLength: n,
      issuedAt: at,
      ...opts.extra,
    };
    const proof: Proof = { ...body, signature: { signer: signer.publicKey, signature: signer.sign(body) } };
    const leafHash = leafHashOf(proof);
    await tx.query(
      `INSERT INTO escrows (id, state, payer, payee, payer_key, payee_key, amount, asset, terms, terms_hash, timeouts,
                            custody_status, trail_length, trail_head, created_at, updated_at)
       VALUES ($1, 'settled', '{}', '{}', $2, $3, 10000000, 'USDC', $7, $4, '{}', 'settled', $5, $6, svc_now(), svc_now())`,
      [escrowId, body.payer, body.payee, body.termsHash, n + 1, trail[n].hash, terms],
    );
    for (const e of trail) {
      await tx.query('INSERT INTO trail_entries (escrow_id, idx, prev_hash, hash, at, event, body) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        escrowId,
        e.index,
        e.prevHash,
        e.hash,
        e.at,
        e.event,
        JSON.stringify(e.body),
      ]);
    }
    await tx.query('INSERT INTO proofs (id, escrow_id, leaf_index, leaf_hash, doc, issued_at) VALUES ($1, $2, NULL, $3, $4, svc_now())', [
      proof.id,
      escrowId,
      leafHash,
      canonicalize(proof),
    ]);
    const seq = sequenceLeaf(proof.id, leafHash);
    await tx.query(seq.text, seq.params);
    return { proof, leafHash, trail: trail.slice(0, n) };
  });
  // Integrated as the service's integrator does it, after the commit.
  const { integrated } = await integrateBatch(db, { keys: issuerHeadKeys, max: 1000, indexed: recordIndices });
  const mine = integrated.find((d) => d.entryId === issued.proof.id);
  if (!mine) throw new Error(`synthetic proof ${issued.proof.id} was not integrated`);
  return { ...issued, leafIndex: mine.index };
}
