// The text forms of the service's Ed25519 private keys (docs/keys.md): the C2SP signed-note private
// key `PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 ‖ 32-byte seed)>` and the PKCS#8 PEM that
// `openssl genpkey -algorithm ed25519` writes (RFC 8410 §7). Pure: files are read at the edge.
import { concatBytes, fromBase64, toBase64 } from '@escrow-settlement/protocol/crypto/bytes';
import { publicKeyOf } from '@escrow-settlement/protocol/crypto/ed25519';
import { ED25519_ALG, noteKeyHash } from '@escrow-settlement/protocol/tlog/checkpoint';
import { hexEncode } from '@escrow-settlement/protocol/tlog/encoding';

/** A parsed private key: its seed and, for a signed-note key, the name it carries. */
export interface KeyText {
  seed: Uint8Array;
  /** The signed-note key name (absent for PKCS#8). */
  name?: string;
  format: 'signed-note' | 'pkcs8';
}

const NOTE_PREFIX = 'PRIVATE+KEY+';
// RFC 8410 §7: SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32) } }.
const PKCS8_ED25519_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);
const PEM_RE = /^-----BEGIN PRIVATE KEY-----\r?\n([A-Za-z0-9+/=\r\n]+?)\r?\n?-----END PRIVATE KEY-----\s*$/;

/**
 * Parses a signed-note private key or an Ed25519 PKCS#8 PEM. Throws TypeError saying what is wrong
 * (never echoing key bytes), so the caller can name its variable in front.
 */
export function parseKeyText(text: string): KeyText {
  const t = text.trim();
  if (t.startsWith(NOTE_PREFIX)) return parseNoteKey(t);
  if (t.startsWith('-----BEGIN ')) return { seed: parsePkcs8Pem(t), format: 'pkcs8' };
  throw new TypeError('is neither a signed-note private key (PRIVATE+KEY+…) nor a PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)');
}

function parseNoteKey(t: string): KeyText {
  // PRIVATE+KEY+<name>+<id>+<key>: the name has no '+', the base64 key may.
  const parts = t.slice(NOTE_PREFIX.length).split('+');
  if (parts.length < 3) throw new TypeError('is not a signed-note private key: expected PRIVATE+KEY+<name>+<key id>+<key>');
  const [name, idHex] = parts;
  const b64 = parts.slice(2).join('+');
  if (!name || /[\s]/.test(name)) throw new TypeError('has an empty or malformed key name');
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new TypeError('has a key id that is not 8 lowercase hex digits');
  let blob: Uint8Array;
  try {
    blob = fromBase64(b64, 'key');
  } catch {
    throw new TypeError('has a key that is not base64');
  }
  if (blob.length !== 33 || blob[0] !== ED25519_ALG)
    throw new TypeError('is not an Ed25519 key (expected base64 of 0x01 and a 32-byte seed)');
  const seed = blob.slice(1);
  const id = hexEncode(noteKeyHash(name, publicKeyOf(seed), ED25519_ALG));
  if (id !== idHex) throw new TypeError(`has key id ${idHex}, but the key's id is ${id}`);
  return { seed, name, format: 'signed-note' };
}

function parsePkcs8Pem(t: string): Uint8Array {
  const m = PEM_RE.exec(t);
  if (!m) throw new TypeError('is not a PKCS#8 PEM (-----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----)');
  let der: Uint8Array;
  try {
    der = fromBase64(m[1].replace(/\s+/g, ''), 'pem');
  } catch {
    throw new TypeError('has a PEM body that is not base64');
  }
  const prefixOk = der.length === 48 && PKCS8_ED25519_PREFIX.every((b, i) => der[i] === b);
  if (!prefixOk) throw new TypeError('is a PKCS#8 key that is not Ed25519 (openssl genpkey -algorithm ed25519 writes one)');
  return der.slice(16);
}

/** The signed-note private key text for a seed (what `keys generate` and the sandbox write). */
export function formatNoteKey(name: string, seed: Uint8Array): string {
  if (!name || /[\s+]/.test(name)) throw new TypeError('key name must be non-empty, without spaces or "+"');
  const id = hexEncode(noteKeyHash(name, publicKeyOf(seed), ED25519_ALG));
  return `${NOTE_PREFIX}${name}+${id}+${toBase64(concatBytes(Uint8Array.of(ED25519_ALG), seed))}\n`;
}

/** The PKCS#8 PEM of a seed (RFC 8410 §7), 64-column base64 as OpenSSL writes it. */
export function formatPkcs8Pem(seed: Uint8Array): string {
  const b64 = toBase64(concatBytes(PKCS8_ED25519_PREFIX, seed));
  return `-----BEGIN PRIVATE KEY-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
}
