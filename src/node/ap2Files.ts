// AP2_ISSUERS and AP2_RECEIPT_KEY at the Node edge (docs/ap2.md §1, §7): the JWKS of trusted issuer keys and the receipt key, read once at start.
import { readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { isAbsolute, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { generatedKeyFile, readSecretFile } from './keyFiles.ts';
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

/** A P-256 private key's 32-byte secret, from a private JWK or a PKCS#8/SEC1 PEM; its public half checked against it. */
export function p256Secret(text: string, what: string): Uint8Array {
  let jwk: Record<string, unknown>;
  try {
    jwk = text.trimStart().startsWith('{')
      ? (JSON.parse(text) as Record<string, unknown>)
      : (createPrivateKey(text).export({ format: 'jwk' }) as Record<string, unknown>);
  } catch (err) {
    throw new ConfigError('AP2_RECEIPT_KEY', `${what} is neither a private JWK nor a PEM private key (${(err as Error).message})`);
  }
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string')
    throw new ConfigError('AP2_RECEIPT_KEY', `${what} must hold a P-256 private key (kty EC, crv P-256, with d)`);
  const secret = new Uint8Array(Buffer.from(jwk.d, 'base64url'));
  let pub: Record<string, unknown>;
  try {
    pub = createPublicKey(
      createPrivateKey({ key: { kty: 'EC', crv: 'P-256', d: jwk.d, x: jwk.x, y: jwk.y } as Record<string, string>, format: 'jwk' }),
    ).export({
      format: 'jwk',
    }) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError('AP2_RECEIPT_KEY', `${what}: not a valid P-256 key (${(err as Error).message})`);
  }
  if (secret.length !== 32 || pub.x !== jwk.x || pub.y !== jwk.y)
    throw new ConfigError('AP2_RECEIPT_KEY', `${what}: its public part (x, y) is not the one its d makes`);
  return secret;
}

const newKeyJwk = () => JSON.stringify(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }));

/**
 * The AP2 receipt key (docs/ap2.md §7), read once at start when AP2 is on: AP2_RECEIPT_KEY's file (its
 * mode checked as every key file's, src/node/keyFiles.ts); else one generated once into
 * DATA_DIR/keys/ap2-receipt.jwk (0600) and reused, or kept in memory with DATA_DIR=:memory:. With
 * DATABASE_URL and no DATA_DIR there is nowhere to keep one: the start ends naming the variable.
 */
export function loadAp2ReceiptKey(config: Config, env: Record<string, string | undefined>): { secret: Uint8Array; generated?: string } {
  if (config.ap2ReceiptKeySource) {
    const f = readSecretFile('AP2_RECEIPT_KEY', config.ap2ReceiptKeySource);
    return { secret: p256Secret(f.text, f.path) };
  }
  if (config.dataDir === ':memory:') return { secret: p256Secret(newKeyJwk(), 'the generated key') };
  if (config.databaseUrl && !env.DATA_DIR)
    throw new ConfigError(
      'AP2_RECEIPT_KEY',
      'AP2 is on (AP2_ISSUERS) and there is no key to sign its receipts with: create one (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ap2-receipt.pem; chmod 600 ap2-receipt.pem) and set AP2_RECEIPT_KEY=file:ap2-receipt.pem',
    );
  const f = generatedKeyFile(config.dataDir, 'ap2-receipt.jwk', newKeyJwk, 'AP2_RECEIPT_KEY');
  return { secret: p256Secret(f.text, f.path), ...(f.created ? { generated: f.path } : {}) };
}
