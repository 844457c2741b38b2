// Deno edge: the same core served with Deno.serve (docs/design.md §1: the core is Web APIs only).
// Run: deno run -A src/deno.ts (env as in README.md "Configuration").
import { parseConfig, type Config } from './config.ts';
import { ConfigError } from './errors.ts';
import { createApp } from './app.ts';
import { openPostgres } from './db/postgres.ts';
import { isDriverTypeFetchFailure } from './db/errors.ts';
import { openPglite } from './db/pglite.ts';
import { migrate } from './db/migrate.ts';
import type { Db } from './db/types.ts';
import { checkDistinct, ensureKeys, type StartKeys } from './proof/keyEras.ts';
import { keyIdOf, memoryKey, type KeySources, type LoadedKey, type LoadOptions } from './proof/keys.ts';
import { keyFileProblem, MAX_KEY_FILE_BYTES, NOT_USABLE, systemTree } from './proof/keyFileRules.ts';
import { formatNoteKey, parseKeyText } from './crypto/keyText.ts';
import { createSigner } from './crypto/signer.ts';
import { startJobs } from './jobs/index.ts';
// The Node edge's lock, run through Deno's node:fs and process (docs/design.md §7): one lock file,
// taken and judged stale the same way by both edges, so neither opens a DATA_DIR the other holds.
import { lockDataDir, type DataDirLock } from './node/dataDirLock.ts';

// Typed locally so the Node toolchain's tsc needs no Deno type package.
/** What Deno's stat calls report, as far as the key-file rules read it. */
interface DenoFileInfo {
  isFile: boolean;
  mode: number | null;
  uid: number | null;
  size: number;
  dev: number;
  ino: number | null;
}
interface DenoFile {
  statSync(): DenoFileInfo;
  readSync(buf: Uint8Array): number | null;
  close(): void;
}
declare const Deno: {
  env: { toObject(): Record<string, string> };
  exit(code: number): never;
  mkdirSync(path: string, opts: { recursive: boolean; mode?: number }): void;
  statSync(path: string): DenoFileInfo;
  realPathSync(path: string): string;
  openSync(path: string, opts: { read: true }): DenoFile;
  uid(): number | null;
  readTextFileSync(path: string): string;
  writeTextFileSync(path: string, data: string, opts: { createNew: boolean; mode: number }): void;
  addSignalListener(signal: 'SIGTERM' | 'SIGINT', fn: () => void): void;
  serve(
    opts: { port: number; hostname: string; onListen?: (addr: { hostname: string; port: number }) => void },
    handler: (req: Request, info: { remoteAddr: { hostname: string } }) => Promise<Response>,
  ): { shutdown(): Promise<void>; finished: Promise<void> };
  stderr: { writeSync(b: Uint8Array): number };
};

const enc = new TextEncoder();
function log(msg: string, fields: Record<string, unknown> = {}) {
  Deno.stderr.writeSync(enc.encode(JSON.stringify({ at: new Date().toISOString(), msg, ...fields }) + '\n'));
}

async function openStore(config: Config): Promise<Db> {
  if (config.databaseUrl) {
    // postgres.js's discarded array-types query (isDriverTypeFetchFailure): dropped, not the end of the process.
    globalThis.addEventListener('unhandledrejection', (e: Event) => {
      const event = e as Event & { reason?: unknown };
      if (!isDriverTypeFetchFailure(event.reason)) return;
      event.preventDefault();
      log('postgres.js lost a connection while it read the array types (porsager/postgres#1192); ignored, the pool reconnects');
    });
    return openPostgres(config.databaseUrl);
  }
  if (config.dataDir !== ':memory:') Deno.mkdirSync(config.dataDir, { recursive: true });
  return openPglite(config.dataDir);
}

let lock: DataDirLock | undefined;
/** A start that cannot go on: one line, the DATA_DIR lock given back, exit 1. */
function refuse(e: unknown): never {
  if (!(e instanceof ConfigError)) throw e;
  log(`bad configuration: ${e.message}`);
  lock?.release();
  Deno.exit(1);
}

let config: Config;
try {
  config = parseConfig(Deno.env.toObject());
  // node:cluster is the Node edge's (src/node/cluster.ts): here, run several processes on one DATABASE_URL.
  if (config.workers !== 1)
    throw new ConfigError('WORKERS', 'the Deno edge serves from one process; run several Deno processes on one DATABASE_URL instead');
  // One process per DATA_DIR, whichever edge it runs on: taken before the keys are generated into it
  // and PGlite opens it; a directory another process holds ends the start naming the holder's pid.
  if (!config.databaseUrl && config.dataDir !== ':memory:') lock = lockDataDir(config.dataDir);
} catch (e) {
  refuse(e);
}
/** A `file:` source as the Node edge reads it (docs/keys.md): a regular file only its owner may read. */
function readKeyFile(variable: string, source: string, opts: LoadOptions = {}): LoadedKey {
  if (!source.startsWith('file:'))
    throw new ConfigError(variable, 'the Deno edge takes file:<path> sources only (PKCS#11 needs the Node edge)');
  const path = source.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  // The rules of docs/keys.md "Key files", as the Node edge applies them (src/node/keyFiles.ts).
  const refuse = (detail: string) => new ConfigError(variable, `${path} ${opts.request ? NOT_USABLE : detail}`);
  const named = systemTree(path);
  if (named) throw new ConfigError(variable, `${path} is under ${named}: a key file must be outside /proc, /sys and /dev`);
  let real: string;
  let st: DenoFileInfo;
  try {
    real = Deno.realPathSync(path);
    st = Deno.statSync(real);
  } catch {
    throw refuse('does not exist or cannot be reached');
  }
  const tree = systemTree(real);
  if (tree) throw refuse(`leads to ${real}, under ${tree}: a key file must be outside /proc, /sys and /dev`);
  if (!st.isFile) throw refuse('is not a regular file');
  let text: string;
  let file: DenoFile;
  try {
    file = Deno.openSync(real, { read: true });
  } catch {
    throw refuse('cannot be read');
  }
  try {
    const f = file.statSync();
    if (!f.isFile || f.ino !== st.ino || f.dev !== st.dev) throw refuse('changed while it was opened');
    const problem = keyFileProblem({ uid: f.uid, mode: f.mode ?? 0, size: f.size }, Deno.uid(), path);
    if (problem) throw refuse(problem);
    const buf = new Uint8Array(MAX_KEY_FILE_BYTES + 1);
    let n = 0;
    for (;;) {
      const got = file.readSync(buf.subarray(n));
      if (got === null || got === 0) break;
      n += got;
      if (n > MAX_KEY_FILE_BYTES) throw refuse('is larger than 64 KiB: a key file holds one key');
    }
    if (n === 0) throw refuse('is empty');
    text = new TextDecoder().decode(buf.subarray(0, n));
  } finally {
    file.close();
  }
  try {
    const k = parseKeyText(text);
    return { signer: createSigner(k.seed), source, ...(k.name !== undefined ? { name: k.name } : {}) };
  } catch (err) {
    throw new ConfigError(variable, `${path} ${(err as Error).message}`);
  }
}

const WEBHOOK_NAME = 'escrow-settlement-webhook';
/** DATA_DIR/keys/, made (0700) if missing: where the sandbox's keys are generated. */
function keysDir(): string {
  const dir = `${config.dataDir.replace(/\/+$/, '')}/keys`;
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** ISSUER_KEY/WEBHOOK_KEY, or the sandbox's DATA_DIR/keys/ (generated once), or memory for :memory:. */
function denoKeys(env: Record<string, string>): StartKeys {
  if (env.ISSUER_KEY || env.WEBHOOK_KEY) {
    if (!env.ISSUER_KEY || !env.WEBHOOK_KEY)
      throw new ConfigError(env.ISSUER_KEY ? 'WEBHOOK_KEY' : 'ISSUER_KEY', 'is required with the other key variable');
    return { issuer: readKeyFile('ISSUER_KEY', env.ISSUER_KEY), webhook: readKeyFile('WEBHOOK_KEY', env.WEBHOOK_KEY) };
  }
  if (config.databaseUrl && !env.DATA_DIR)
    throw new ConfigError(
      'ISSUER_KEY',
      'with DATABASE_URL the service signs with keys you name: create them with `npx tsx src/main.ts keys generate --out DIR` and set ISSUER_KEY=file:DIR/issuer.key WEBHOOK_KEY=file:DIR/webhook.key',
    );
  if (config.dataDir === ':memory:') return { issuer: memoryKey(), webhook: memoryKey() };
  const dir = keysDir();
  const file = (name: string, keyName: string) => {
    const path = `${dir}/${name}`;
    try {
      Deno.writeTextFileSync(path, formatNoteKey(keyName, crypto.getRandomValues(new Uint8Array(32))), { createNew: true, mode: 0o600 });
    } catch {
      // It exists: the key generated by an earlier start, read below.
    }
    return readKeyFile('DATA_DIR', `file:${path}`);
  };
  return { issuer: file('issuer.key', config.logOrigin), webhook: file('webhook.key', WEBHOOK_NAME) };
}

/**
 * Where a rotation's key comes from, as on the Node edge (docs/keys.md "Rotation"): a named key's
 * source; without one, only a sandbox on generated keys rotates, to a new key written beside them
 * (DATA_DIR/keys/<purpose>-<key id>.key, 0600) or kept in memory for :memory:.
 */
function denoSources(env: Record<string, string>): KeySources {
  const load = async (source: string, variable: string, opts?: LoadOptions) => readKeyFile(variable, source, opts);
  if (env.ISSUER_KEY || env.WEBHOOK_KEY) return { load };
  if (config.dataDir === ':memory:') return { load, generate: async () => memoryKey() };
  return {
    load,
    async generate(purpose) {
      const seed = crypto.getRandomValues(new Uint8Array(32));
      const path = `${keysDir()}/${purpose}-${keyIdOf(purpose, createSigner(seed).publicKey)}.key`;
      Deno.writeTextFileSync(path, formatNoteKey(purpose === 'issuer' ? config.logOrigin : WEBHOOK_NAME, seed), {
        createNew: true,
        mode: 0o600,
      });
      return readKeyFile('key', `file:${path}`);
    },
  };
}

let keys: StartKeys;
try {
  keys = denoKeys(Deno.env.toObject());
  checkDistinct(keys);
  if (keys.issuer.name !== undefined && keys.issuer.name !== config.logOrigin)
    throw new ConfigError(
      'ISSUER_KEY',
      `the issuer key is named ${keys.issuer.name}, but the log's origin (LOG_ORIGIN) is ${config.logOrigin}`,
    );
} catch (e) {
  refuse(e);
}
const db = await openStore(config);
await migrate(db);
const keySources = denoSources(Deno.env.toObject());
try {
  await ensureKeys(db, keys, keySources);
} catch (e) {
  refuse(e);
}
const app = createApp({
  db,
  config,
  keySources,
  onError: (err, requestId) => log('request failed', { requestId, error: String(err) }),
});
const jobs = startJobs(app.svc, { log });
const server = Deno.serve(
  {
    port: config.port,
    hostname: config.host,
    onListen: ({ hostname, port }) =>
      log('listening', { url: `http://${hostname}:${port}`, runtime: 'deno', mode: config.apiKey ? 'hosted' : 'sandbox' }),
  },
  (req, info) => app.fetch(req, { ip: info.remoteAddr.hostname }),
);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log('stopping', { signal });
  await server.shutdown();
  await jobs.stop();
  await db.close();
  lock?.release();
  log('stopped');
  Deno.exit(0);
};
Deno.addSignalListener('SIGTERM', () => void stop('SIGTERM'));
Deno.addSignalListener('SIGINT', () => void stop('SIGINT'));
