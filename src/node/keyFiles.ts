// Key files (docs/keys.md): reading a `file:` source with its permission checks, and the sandbox's
// generated keys under DATA_DIR/keys/. Generic over what the file holds (an Ed25519 key, a P-256 PEM
// or JWK, a JWKS): callers parse the text. Every failure is a ConfigError naming the variable, so a
// start-up ends with one line and a rotation answers 4xx.
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync, chmodSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from '../errors.ts';

/** A secret file as read: where it is, its bytes, and the bytes as UTF-8 text. */
export interface SecretFile {
  /** The absolute path. */
  path: string;
  bytes: Uint8Array;
  text: string;
}

/** A key under DATA_DIR/keys/, read or just written. */
export interface GeneratedKeyFile extends SecretFile {
  /** `file:<absolute path>`: the source that names it (what ISSUER_KEY … would say). */
  source: string;
  /** True when this call wrote it (the first start). */
  created: boolean;
}

/** The sub-directory of DATA_DIR holding generated keys (mode 0700). */
export const KEYS_DIR = 'keys';

const why = (err: unknown) => (err as NodeJS.ErrnoException)?.code ?? String(err);

/**
 * The path a `file:` source names: `file:/abs/path`, `file:relative/path` (from the working
 * directory) or `file:///abs/path`. Throws ConfigError(variable) for anything else.
 */
export function fileSourcePath(variable: string, source: string): string {
  if (!source.startsWith('file:')) throw new ConfigError(variable, `must be file:<path> or pkcs11:<URI>, got ${JSON.stringify(source)}`);
  let p = source.slice('file:'.length);
  if (p.startsWith('//')) {
    if (!p.startsWith('///')) throw new ConfigError(variable, 'a file: URL with a host is not supported; write file:/absolute/path');
    p = p.slice(2);
  }
  if (p === '') throw new ConfigError(variable, 'file: names no path');
  return isAbsolute(p) ? p : resolve(p);
}

/**
 * readSecretFile(variable, source) → SecretFile. Reads the file a `file:<path>` source names,
 * synchronously. Refused with a ConfigError naming `variable` and saying what is wrong when the
 * source is not `file:`, the file is missing, is not a regular file, cannot be read, is empty, or
 * its mode gives the group or others any access (it must be 0600 or 0400: `chmod 600 <path>`).
 * The text is not parsed here.
 */
export function readSecretFile(variable: string, source: string): SecretFile {
  const path = fileSourcePath(variable, source);
  let mode: number;
  let regular: boolean;
  try {
    const st = statSync(path);
    mode = st.mode & 0o777;
    regular = st.isFile();
  } catch (err) {
    if (why(err) === 'ENOENT') throw new ConfigError(variable, `${path} does not exist`);
    if (why(err) === 'EACCES') throw new ConfigError(variable, `${path} cannot be reached (permission denied on a directory)`);
    throw new ConfigError(variable, `${path} cannot be read (${why(err)})`);
  }
  if (!regular) throw new ConfigError(variable, `${path} is not a regular file`);
  if ((mode & 0o077) !== 0)
    throw new ConfigError(variable, `${path} has mode 0${mode.toString(8)}: group or others may read it; chmod 600 ${path}`);
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(readFileSync(path));
  } catch (err) {
    throw new ConfigError(variable, `${path} cannot be read (${why(err) === 'EACCES' ? 'permission denied' : why(err)})`);
  }
  if (bytes.length === 0) throw new ConfigError(variable, `${path} is empty`);
  return { path, bytes, text: new TextDecoder().decode(bytes) };
}

/** DATA_DIR/keys, created with mode 0700 (and narrowed to 0700 if it exists wider). */
export function keysDir(dataDir: string): string {
  const dir = resolve(join(dataDir, KEYS_DIR));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  } catch (err) {
    throw new ConfigError('DATA_DIR', `cannot create ${dir} (${why(err)})`);
  }
  return dir;
}

/**
 * Writes `content` to `path` as a new file of mode 0600, durably and all at once: a temporary file,
 * fsync, then a hard link to the final name (which fails when that name exists, so an existing key
 * is never overwritten). Throws the node:fs error (EEXIST when the file is there).
 */
export function writeNewSecretFile(path: string, content: string | Uint8Array): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    chmodSync(tmp, 0o600);
    linkSync(tmp, path);
  } finally {
    unlinkSync(tmp);
  }
  const dirFd = openSync(resolve(path, '..'), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * generatedKeyFile(dataDir, fileName, generate) → GeneratedKeyFile. The sandbox's key
 * DATA_DIR/keys/<fileName>: read (with readSecretFile's checks, errors naming `variable`) when it
 * exists, else written from `generate()` with mode 0600 in a directory of mode 0700 and read back.
 * Not for DATA_DIR=:memory: (keep the key in memory there). Synchronous.
 */
export function generatedKeyFile(
  dataDir: string,
  fileName: string,
  generate: () => string | Uint8Array,
  variable = 'DATA_DIR',
): GeneratedKeyFile {
  const path = join(keysDir(dataDir), fileName);
  let created = false;
  try {
    statSync(path);
  } catch (err) {
    if (why(err) !== 'ENOENT') throw new ConfigError(variable, `${path} cannot be read (${why(err)})`);
    try {
      writeNewSecretFile(path, generate());
      created = true;
    } catch (e) {
      if (why(e) !== 'EEXIST') throw new ConfigError(variable, `cannot write ${path} (${why(e)})`);
    }
  }
  const source = `file:${path}`;
  return { ...readSecretFile(variable, source), source, created };
}
