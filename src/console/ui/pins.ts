// The issuer keys the user pinned: fetched once from /.well-known/proof-issuer.json when the user
// agrees, then remembered in localStorage, so later verifications trust the pin, not the server.
import type { IssuerKey } from '@escrow-settlement/protocol/types';
import { ApiError, api } from './api.ts';

const PINS = 'escrow-console.pinnedIssuerKeys';

export function pinnedKeys(): IssuerKey[] {
  try {
    const v = JSON.parse(localStorage.getItem(PINS) ?? '[]');
    return Array.isArray(v) ? v.filter((k) => typeof k?.publicKey === 'string' && /^[0-9a-f]{64}$/.test(k.publicKey)) : [];
  } catch {
    return [];
  }
}

export const pinKeys = (keys: IssuerKey[]) => localStorage.setItem(PINS, JSON.stringify(keys));
export const forgetPins = () => localStorage.removeItem(PINS);

/** The one network step of verification, and only when the user asks: read the issuer document. */
export async function fetchIssuerKeys(): Promise<IssuerKey[]> {
  let keys: unknown;
  try {
    // Read as unknown: the pin is what later verifications trust, so its shape is checked here.
    keys = (await api.issuerKeys())?.keys;
  } catch (err) {
    if (err instanceof ApiError) throw new Error(`issuer document answered ${err.status}`);
    throw err;
  }
  if (!Array.isArray(keys)) throw new Error('issuer document has no keys array');
  return keys as IssuerKey[];
}
