// AP2_ISSUERS at the Node edge (docs/ap2.md §1): the JWKS file of trusted issuer keys, read once at start.
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../config.ts';
import { ap2Issuers, type Ap2Issuers } from '@escrow-settlement/protocol/ap2/chain';

/**
 * The trusted issuer keys a `file:<path>` JWKS names. Public keys only, so the file's mode is not
 * checked; a private member (`d`) is refused, as is anything that is not a JWKS of P-256 keys with
 * distinct kids. Every failure is a ConfigError naming AP2_ISSUERS.
 */
export function loadAp2Issuers(source: string): Ap2Issuers {
  const raw = source.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  const path = isAbsolute(raw) ? raw : resolve(raw);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError('AP2_ISSUERS', `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let jwks: unknown;
  try {
    jwks = JSON.parse(text);
  } catch {
    throw new ConfigError('AP2_ISSUERS', `${path} is not JSON (a JWKS: {"keys": [...]})`);
  }
  try {
    return ap2Issuers(jwks, path);
  } catch (err) {
    throw new ConfigError('AP2_ISSUERS', (err as Error).message);
  }
}
