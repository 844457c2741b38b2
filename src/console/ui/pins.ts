// The issuer keys the user pinned: fetched once from /.well-known/proof-issuer.json when the user
// agrees, then remembered in localStorage, so later verifications trust the pin, not the server.
import type { IssuerKey } from '@escrow-settlement/protocol/types';

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
  const res = await fetch('/.well-known/proof-issuer.json', { credentials: 'omit', cache: 'no-store' });
  if (!res.ok) throw new Error(`issuer document answered ${res.status}`);
  const doc = await res.json();
  if (!Array.isArray(doc?.keys)) throw new Error('issuer document has no keys array');
  return doc.keys as IssuerKey[];
}
