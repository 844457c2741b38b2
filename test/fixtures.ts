// Building blocks for lifecycle tests: agents, escrows in a given state, client-side signing.
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, generateKeyPairSync } from 'node:crypto';
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import type { Harness } from './harness.ts';

export async function agent(h: Harness, label = 'a') {
  const r = await h.req('POST', '/v1/agents', { label });
  assert.equal(r.status, 201, r.text);
  return r.body as { id: string; publicKey: string; label: string };
}

export const PASSING_TERMS = { description: 'a report with a title', checks: [{ kind: 'shape', requiredFields: ['title'] }] };

export async function escrow(h: Harness, opts: Record<string, unknown> = {}) {
  const payer = await agent(h, 'payer');
  const payee = await agent(h, 'payee');
  const r = await h.req('POST', '/v1/escrows', {
    amount: '10',
    asset: 'USDC',
    terms: PASSING_TERMS,
    payerAgentId: payer.id,
    payeeAgentId: payee.id,
    ...opts,
  });
  assert.equal(r.status, 201, r.text);
  return { payer, payee, escrow: r.body as Record<string, any>, id: r.body.id as string };
}

export async function funded(h: Harness, opts: Record<string, unknown> = {}) {
  const e = await escrow(h, opts);
  const f = await h.req('POST', `/v1/escrows/${e.id}/fund`);
  assert.equal(f.status, 200, f.text);
  return { ...e, escrow: f.body };
}

/** Delivered with a failed verdict (payload lacks the required title). */
export async function failedDelivery(h: Harness, opts: Record<string, unknown> = {}) {
  const e = await funded(h, opts);
  const d = await h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { body: 'no title' } });
  assert.equal(d.status, 201, d.text);
  assert.equal(d.body.verdict.passed, false);
  return { ...e, delivery: d.body };
}

export async function settled(h: Harness, opts: Record<string, unknown> = {}) {
  const e = await funded(h, opts);
  const d = await h.req('POST', `/v1/escrows/${e.id}/delivery`, { agentId: e.payee.id, payload: { title: 'done' } });
  assert.equal(d.status, 201, d.text);
  assert.ok(d.body.proof, d.text);
  return { ...e, delivery: d.body, proof: d.body.proof };
}

/** An Ed25519 key held client-side (node:crypto), independent of the service's implementation. */
export function clientKey() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  return {
    publicKey: Buffer.from(raw).toString('hex'),
    sign(value: unknown): string {
      return nodeSign(null, Buffer.from(canonicalize(value)), privateKey).toString('hex');
    },
  };
}

export function nodeVerifyHex(publicKeyHex: string, message: string | Uint8Array, signatureHex: string): boolean {
  const key = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(publicKeyHex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
  return nodeVerify(null, typeof message === 'string' ? Buffer.from(message) : message, key, Buffer.from(signatureHex, 'hex'));
}

export { createPrivateKey };
