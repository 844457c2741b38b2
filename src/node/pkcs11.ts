// Keys inside a PKCS#11 token (docs/keys.md "PKCS#11"): a `pkcs11:` URI (RFC 7512) names the token
// and the object; the module is PKCS11_MODULE alone, read at start (a URI naming module-path or
// module-name is refused: no request and no database row may make the process load a library); the
// PIN comes from the URI's pin-source file. The private key never leaves the token: signing is C_Sign with CKM_EDDSA
// (PKCS#11 3.0 §6.3.14, Ed25519). The binding, pkcs11js, is an optional dependency imported only here,
// and this file is imported only when a pkcs11: source is configured.
import { createRequire } from 'node:module';
import { ConfigError } from '../errors.ts';
import type { LoadedKey, LoadOptions } from '../proof/keys.ts';
import { readSecretFile } from './keyFiles.ts';

// PKCS#11 3.0 constants (pkcs11t.h).
const CKO_PUBLIC_KEY = 2;
const CKO_PRIVATE_KEY = 3;
const CKA_CLASS = 0x0;
const CKA_LABEL = 0x3;
const CKA_ID = 0x102;
const CKA_KEY_TYPE = 0x100;
const CKA_EC_POINT = 0x181;
const CKK_EC_EDWARDS = 0x40;
const CKM_EDDSA = 0x1057;
const CKF_SERIAL_SESSION = 0x4;
const CKU_USER = 1;
const CKR_USER_ALREADY_LOGGED_IN = 0x100;

/** What a pkcs11: URI says (RFC 7512 §2.3), as far as this service uses it. */
export interface Pkcs11Uri {
  token?: string;
  object?: string;
  id?: Uint8Array;
  serial?: string;
  pinSource?: string;
}

const PATH_ATTRS = new Set([
  'token',
  'object',
  'id',
  'type',
  'serial',
  'manufacturer',
  'model',
  'library-manufacturer',
  'library-description',
  'library-version',
  'slot-id',
  'slot-description',
  'slot-manufacturer',
]);
const QUERY_ATTRS = new Set(['pin-source', 'pin-value', 'module-name', 'module-path']);

function pct(variable: string, v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    throw new ConfigError(variable, `bad percent-encoding in the pkcs11: URI near ${JSON.stringify(v)}`);
  }
}

/** An id's bytes: RFC 7512 percent-encodes them one by one (`id=%01%02`). */
function pctBytes(variable: string, v: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) {
    if (v[i] !== '%') {
      out.push(v.charCodeAt(i) & 0xff);
      continue;
    }
    const h = v.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(h))
      throw new ConfigError(variable, `bad percent-encoding in the pkcs11: URI id near ${JSON.stringify(v)}`);
    out.push(Number.parseInt(h, 16));
    i += 2;
  }
  return Uint8Array.from(out);
}

/**
 * Parses a pkcs11: URI; refuses a pin-value (the source is stored with its era: a PIN goes in a
 * pin-source file) and a module-path or module-name (the module is PKCS11_MODULE's, docs/keys.md).
 */
export function parsePkcs11Uri(variable: string, uri: string): Pkcs11Uri {
  if (!uri.startsWith('pkcs11:')) throw new ConfigError(variable, 'is not a pkcs11: URI');
  const [path, query = ''] = uri.slice('pkcs11:'.length).split('?', 2);
  const out: Pkcs11Uri = {};
  for (const part of path.split(';').filter(Boolean)) {
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    const v = pct(variable, eq < 0 ? '' : part.slice(eq + 1));
    if (!PATH_ATTRS.has(k)) throw new ConfigError(variable, `pkcs11: URI attribute ${k} is not one this service knows (RFC 7512 §2.3)`);
    if (k === 'token') out.token = v;
    else if (k === 'object') out.object = v;
    else if (k === 'serial') out.serial = v;
    else if (k === 'id') out.id = pctBytes(variable, eq < 0 ? '' : part.slice(eq + 1));
    else if (k === 'type' && v !== 'private')
      throw new ConfigError(variable, `pkcs11: URI type=${v}: the service needs the private key (type=private)`);
  }
  for (const part of query.split('&').filter(Boolean)) {
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    const v = pct(variable, eq < 0 ? '' : part.slice(eq + 1));
    if (!QUERY_ATTRS.has(k)) throw new ConfigError(variable, `pkcs11: URI query attribute ${k} is not one this service knows`);
    if (k === 'pin-value')
      throw new ConfigError(
        variable,
        'pkcs11: URI carries pin-value: put the PIN in a file (mode 0600) and name it with pin-source=file:<path>',
      );
    if (k === 'module-path' || k === 'module-name')
      throw new ConfigError(
        variable,
        `pkcs11: URI names ${k}: the PKCS#11 module is PKCS11_MODULE alone, set where the service starts; remove ${k} from the URI (docs/keys.md "PKCS#11")`,
      );
    if (k === 'pin-source') out.pinSource = v;
  }
  if (!out.object && !out.id) throw new ConfigError(variable, 'pkcs11: URI names no object: add object=<label of the key pair>');
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: pkcs11js's module object, loaded at run time.
type Pkcs11 = any;
/** One initialised module per library path: C_Initialize once per process. */
const modules = new Map<string, Pkcs11>();

function loadModule(variable: string, path: string): Pkcs11 {
  const hit = modules.get(path);
  if (hit) return hit;
  let binding: { PKCS11: new () => Pkcs11 };
  try {
    // The optional dependency, resolved only now: a service without pkcs11: keys never loads it.
    binding = createRequire(import.meta.url)('pkcs11js');
  } catch (err) {
    throw new ConfigError(
      variable,
      `needs the optional package pkcs11js, which is not installed (${(err as Error).message.split('\n')[0]}): npm install pkcs11js`,
    );
  }
  const p = new binding.PKCS11();
  try {
    p.load(path);
    p.C_Initialize();
  } catch (err) {
    throw new ConfigError('PKCS11_MODULE', `cannot load the PKCS#11 module ${path} (${(err as Error).message})`);
  }
  modules.set(path, p);
  return p;
}

const trimmed = (s: string) => s.replace(/[\s\0]+$/, '');

/** The Ed25519 public key from CKA_EC_POINT: a DER OCTET STRING (04 20 ‖ 32 bytes) or the raw 32 bytes. */
function ecPoint(raw: Uint8Array): Uint8Array | undefined {
  if (raw.length === 32) return raw;
  if (raw.length === 34 && raw[0] === 0x04 && raw[1] === 0x20) return raw.slice(2);
  return undefined;
}

/**
 * Loads the key a `pkcs11:` source names: finds the token by label (and serial), logs in with the
 * pin-source PIN, finds the private key and its public half by label (and id), and returns a signer
 * that signs inside the token. Every failure is a ConfigError naming `variable`.
 */
export function loadPkcs11Key(variable: string, source: string, moduleFromEnv: string | undefined, opts: LoadOptions = {}): LoadedKey {
  // The URI is parsed, and refused, before anything is loaded.
  const uri = parsePkcs11Uri(variable, source);
  const modulePath = moduleFromEnv;
  if (!modulePath)
    throw new ConfigError(
      'PKCS11_MODULE',
      `is required for ${variable}=pkcs11:… (the token's PKCS#11 library, e.g. /usr/lib/softhsm/libsofthsm2.so)`,
    );
  const p = loadModule(variable, modulePath);
  const slot = (p.C_GetSlotList(true) as unknown[]).find((s) => {
    const info = p.C_GetTokenInfo(s);
    return (
      (uri.token === undefined || trimmed(info.label) === uri.token) &&
      (uri.serial === undefined || trimmed(info.serialNumber) === uri.serial)
    );
  });
  if (slot === undefined) throw new ConfigError(variable, `no token ${JSON.stringify(uri.token ?? '')} in ${modulePath}`);
  const session = p.C_OpenSession(slot, CKF_SERIAL_SESSION);
  if (uri.pinSource !== undefined) {
    const pin = readSecretFile(variable, uri.pinSource, opts).text.replace(/\r?\n$/, '');
    try {
      p.C_Login(session, CKU_USER, pin);
    } catch (err) {
      if ((err as { code?: number }).code !== CKR_USER_ALREADY_LOGGED_IN)
        throw new ConfigError(variable, `the token refused the PIN from ${uri.pinSource} (${(err as Error).message})`);
    }
  }
  const find = (cls: number) => {
    const tmpl: Array<{ type: number; value: number | string | Buffer }> = [
      { type: CKA_CLASS, value: cls },
      { type: CKA_KEY_TYPE, value: CKK_EC_EDWARDS },
    ];
    if (uri.object !== undefined) tmpl.push({ type: CKA_LABEL, value: uri.object });
    if (uri.id !== undefined) tmpl.push({ type: CKA_ID, value: Buffer.from(uri.id) });
    p.C_FindObjectsInit(session, tmpl);
    const found = p.C_FindObjects(session, 2) as unknown[];
    p.C_FindObjectsFinal(session);
    return found;
  };
  const what = `object ${JSON.stringify(uri.object ?? '')} in token ${JSON.stringify(uri.token ?? '')}`;
  const priv = find(CKO_PRIVATE_KEY);
  if (priv.length === 0)
    throw new ConfigError(
      variable,
      `no Ed25519 private key ${what}${uri.pinSource ? '' : ' (no pin-source: a private key is visible only after login)'}`,
    );
  if (priv.length > 1) throw new ConfigError(variable, `more than one Ed25519 private key is ${what}: add id=… to the URI`);
  const pub = find(CKO_PUBLIC_KEY);
  if (pub.length !== 1) throw new ConfigError(variable, `the public half of ${what} is not in the token (it is needed to publish the key)`);
  const [{ value: point }] = p.C_GetAttributeValue(session, pub[0], [{ type: CKA_EC_POINT }]) as Array<{ value: Buffer }>;
  const publicKey = ecPoint(new Uint8Array(point));
  if (!publicKey) throw new ConfigError(variable, `${what} has a public key that is not an Ed25519 point`);
  const key = priv[0];
  return {
    source,
    signer: {
      publicKey,
      sign(message: Uint8Array): Uint8Array {
        p.C_SignInit(session, { mechanism: CKM_EDDSA }, key);
        return new Uint8Array(p.C_Sign(session, Buffer.from(message), Buffer.alloc(64)));
      },
    },
  };
}
