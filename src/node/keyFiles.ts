// Key files (docs/keys.md): reading a `file:` source with its permission checks, and the sandbox's
// generated keys under DATA_DIR/keys/. Generic over what the file holds (an Ed25519 key, a P-256 PEM
// or JWK, a JWKS): callers parse the text. Every failure is a ConfigError naming the variable, so a
// start-up ends with one line and a rotation answers 4xx.
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from '../errors.ts';
import { keyFileProblem, MAX_KEY_FILE_BYTES, NOT_USABLE, systemTree } from '../proof/keyFileRules.ts';

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

export { MAX_KEY_FILE_BYTES, NOT_USABLE };

/** Whose the source is: the operator's (start-up variables, stored eras: the log) or a request's (its answer). */
export interface ReadOptions {
  /**
   * The source came in a request: a refusal names the rules, not which one a path broke, so an
   * answer never tells whether some path exists, what it is, whose it is or its mode.
   */
  request?: boolean;
}

/**
 * readSecretFile(variable, source, opts?) → SecretFile. Reads the file a `file:<path>` source names,
 * synchronously, by the rules of docs/keys.md "Key files": a regular file (after symbolic links) of
 * at most MAX_KEY_FILE_BYTES, owned by the service's user or root, that group and others cannot
 * access (0600 or 0400), not empty, outside /proc, /sys and /dev. Nothing under those trees, and
 * nothing but a regular file, is opened; the file is opened without following a link, checked again
 * on the open descriptor, and read with the bound. A refusal is a ConfigError naming `variable`:
 * which rule the file broke, or with `opts.request` the rules alone (NOT_USABLE). The text is not parsed here.
 */
export function readSecretFile(variable: string, source: string, opts: ReadOptions = {}): SecretFile {
  const path = fileSourcePath(variable, source);
  const refuse = (detail: string) => new ConfigError(variable, `${path} ${opts.request ? NOT_USABLE : detail}`);
  // The name alone breaks this rule: saying so tells nothing about the file system.
  const named = systemTree(path);
  if (named) throw new ConfigError(variable, `${path} is under ${named}: a key file must be outside /proc, /sys and /dev`);
  let real: string;
  try {
    real = realpathSync(path);
  } catch (err) {
    if (why(err) === 'ENOENT') throw refuse('does not exist');
    if (why(err) === 'EACCES') throw refuse('cannot be reached (permission denied on a directory)');
    throw refuse(`cannot be read (${why(err)})`);
  }
  const tree = systemTree(real);
  if (tree) throw refuse(`leads to ${real}, under ${tree}: a key file must be outside /proc, /sys and /dev`);
  // Before opening: opening a FIFO or a device can block or act; only a regular file is opened.
  let st: Stats;
  try {
    st = statSync(real);
  } catch (err) {
    throw refuse(`cannot be read (${why(err)})`);
  }
  if (!st.isFile()) throw refuse('is not a regular file');
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw refuse(`cannot be read (${why(err) === 'EACCES' ? 'permission denied' : why(err)})`);
  }
  try {
    // The rules, on what was opened (a file swapped in after the checks above is caught here).
    const f = fstatSync(fd);
    if (!f.isFile() || f.dev !== st.dev || f.ino !== st.ino) throw refuse('changed while it was opened');
    const problem = keyFileProblem(f, process.getuid?.() ?? null, path);
    if (problem) throw refuse(problem);
    // Read with the bound: one byte more than allowed tells a file that grew since fstat.
    const buf = Buffer.alloc(MAX_KEY_FILE_BYTES + 1);
    let n = 0;
    for (;;) {
      let got: number;
      try {
        got = readSync(fd, buf, n, buf.length - n, null);
      } catch (err) {
        throw refuse(`cannot be read (${why(err)})`);
      }
      if (got === 0) break;
      n += got;
      if (n > MAX_KEY_FILE_BYTES) throw refuse('is larger than 64 KiB: a key file holds one key');
    }
    if (n === 0) throw refuse('is empty');
    const bytes = new Uint8Array(buf.subarray(0, n));
    return { path, bytes, text: new TextDecoder().decode(bytes) };
  } finally {
    closeSync(fd);
  }
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
