// Shared pieces of the admin tests: the root key, a harness that sends a key, and plausible path ids.
import assert from 'node:assert/strict';
import { newId } from '../../src/crypto/ids.ts';
import type { Harness } from '../harness.ts';

export const ROOT = 'root-secret-0123456789';
export const HOSTED = { API_KEY: ROOT };

/** The same harness, with `Authorization: Bearer <key>` on every request (fixtures then work in hosted mode). */
export function withKey(h: Harness, key: string): Harness {
  return { ...h, req: (method, path, body, headers = {}) => h.req(method, path, body, { authorization: `Bearer ${key}`, ...headers }) };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Fills each path parameter with a plausible value: an id of the right prefix, or a log size. */
export function fillPath(path: string): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    if (name === 'firstSize' || name === 'secondSize') return '1';
    if (name === 'keyId') return newId('key');
    if (name === 'proofId' || path.startsWith('/v1/proofs/')) return newId('prf');
    if (path.startsWith('/v1/mandates/')) return newId('mnd');
    if (path.startsWith('/v1/webhooks/')) return newId('dlr');
    return newId('esc');
  });
}

/** Mints a key as root and returns the 201 body. */
export async function mint(h: Harness, body: Record<string, unknown> = {}) {
  const r = await h.req('POST', '/v1/admin/keys', body, bearer(ROOT));
  assert.equal(r.status, 201, r.text);
  return r.body as { id: string; label: string; secret: string; createdAt: string; rateLimitMax?: number };
}
