// The Node edge's service keys (docs/keys.md): ISSUER_KEY and WEBHOOK_KEY as `file:` or `pkcs11:`
// sources, the sandbox's keys generated once into DATA_DIR/keys/, or kept in memory for
// DATA_DIR=:memory:. Everything that reads a file or a token is here, so the core signs through the
// Signer face alone; a failure is a ConfigError naming the variable (one line at start, 4xx on rotation).
import { join, relative } from 'node:path';
import type { Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { formatNoteKey, parseKeyText } from '../crypto/keyText.ts';
import { createSigner } from '../crypto/signer.ts';
import { keyIdOf, memoryKey, type KeySources, type LoadedKey, type LoadOptions, type Purpose } from '../proof/keys.ts';
import { checkDistinct, type StartKeys } from '../proof/keyEras.ts';
import { generatedKeyFile, KEYS_DIR, keysDir, readSecretFile, writeNewSecretFile } from './keyFiles.ts';
import { hasPgliteDb } from './pgliteInit.ts';
import { existsSync } from 'node:fs';

type Env = Record<string, string | undefined>;

/** The file names `keys generate` and `keys export` write, and the sandbox generates. */
export const KEY_FILES: Record<Purpose, string> = { issuer: 'issuer.key', webhook: 'webhook.key' };

/** How this service was started, for lines that name one of its commands (`… keys export --out DIR`). */
export function selfCommand(argv: readonly string[] = process.argv): string {
  const script = argv[1] ?? 'src/main.ts';
  const rel = relative(process.cwd(), script) || script;
  return /\.ts$/.test(script) ? `npx tsx ${rel}` : `node ${rel}`;
}

/** A new Ed25519 seed from the platform's CSPRNG. */
const newSeed = () => crypto.getRandomValues(new Uint8Array(32));

/** A key from the text of a file (signed-note or PKCS#8); the parse error names the variable and the file. */
function keyFromText(variable: string, source: string, path: string, text: string): LoadedKey {
  try {
    const k = parseKeyText(text);
    return { signer: createSigner(k.seed), source, ...(k.name !== undefined ? { name: k.name } : {}) };
  } catch (err) {
    throw new ConfigError(variable, `${path} ${(err as Error).message}`);
  }
}

/**
 * The Node edge's key sources. `generateInto` is where a rotation without a source writes its new key
 * (a DATA_DIR, or 'memory'); absent when the keys are named, which makes a rotation name its key too.
 * `logOrigin` names a generated issuer key; `pkcs11Module` is PKCS11_MODULE.
 */
export function nodeKeySources(opts: { generateInto?: string; logOrigin: string; pkcs11Module?: string }): KeySources {
  const load = async (source: string, variable: string, lo: LoadOptions = {}): Promise<LoadedKey> => {
    if (source.startsWith('file:')) {
      const f = readSecretFile(variable, source, lo);
      return keyFromText(variable, source, f.path, f.text);
    }
    if (source.startsWith('pkcs11:')) {
      // The binding is loaded only now, for a configured pkcs11: key (docs/keys.md "PKCS#11").
      const { loadPkcs11Key } = await import('./pkcs11.ts');
      return loadPkcs11Key(variable, source, opts.pkcs11Module, lo);
    }
    throw new ConfigError(variable, `must be file:<path> or pkcs11:<URI>, got ${JSON.stringify(source.slice(0, 80))}`);
  };
  const into = opts.generateInto;
  if (into === undefined) return { load };
  return {
    load,
    async generate(purpose) {
      if (into === 'memory') return memoryKey();
      const seed = newSeed();
      const name = purpose === 'issuer' ? opts.logOrigin : 'escrow-settlement-webhook';
      const path = join(keysDir(into), `${purpose}-${keyIdOf(purpose, createSigner(seed).publicKey)}.key`);
      writeNewSecretFile(path, formatNoteKey(name, seed));
      return load(`file:${path}`, 'key');
    },
  };
}

export interface NodeKeys {
  keys: StartKeys;
  sources: KeySources;
  /** The configuration with LOG_ORIGIN taken from a signed-note issuer key when it was unset. */
  config: Config;
  /** What the start-up line says about them. */
  note: Record<string, unknown>;
}

/**
 * Resolves the keys this process signs with, before the database is opened: the configured sources,
 * or (sandbox, no key variable) DATA_DIR/keys/, or memory for :memory:. A database service without
 * key variables and without DATA_DIR is refused: its keys must be named.
 */
export async function resolveStartKeys(env: Env, config: Config): Promise<NodeKeys> {
  const issuerSource = env.ISSUER_KEY || undefined;
  const webhookSource = env.WEBHOOK_KEY || undefined;
  const cmd = selfCommand();
  const exportCommand = `${cmd} keys export --out DIR`;
  const pkcs11Module = env.PKCS11_MODULE || undefined;
  if (issuerSource === undefined && webhookSource === undefined) {
    if (config.databaseUrl !== undefined && !env.DATA_DIR)
      throw new ConfigError(
        'ISSUER_KEY',
        `with DATABASE_URL the service signs with keys you name: create them with \`${cmd} keys generate --out DIR\` and start with ISSUER_KEY=file:DIR/issuer.key WEBHOOK_KEY=file:DIR/webhook.key (docs/keys.md)`,
      );
    if (config.dataDir === ':memory:') {
      if (config.workers !== 1)
        throw new ConfigError(
          'DATA_DIR',
          ':memory: keeps the keys in one process: WORKERS > 1 needs ISSUER_KEY and WEBHOOK_KEY (or a DATA_DIR)',
        );
      const sources = nodeKeySources({ generateInto: 'memory', logOrigin: config.logOrigin, pkcs11Module });
      return {
        keys: { issuer: memoryKey(), webhook: memoryKey(), exportCommand },
        sources,
        config,
        note: { keys: 'in memory (DATA_DIR=:memory:)' },
      };
    }
    // A database in DATA_DIR without its keys: an earlier version's (its keys are inside), or keys
    // lost. A new key would not be its era: say how to write the old ones out where they are read.
    if (!config.databaseUrl && hasPgliteDb(config.dataDir) && !existsSync(join(config.dataDir, KEYS_DIR, KEY_FILES.issuer)))
      throw new ConfigError(
        'DATA_DIR',
        `${config.dataDir} holds a database but not its keys (${join(KEYS_DIR, KEY_FILES.issuer)}): a database written by an earlier version keeps them inside; run \`${cmd} keys export --out ${join(config.dataDir, KEYS_DIR)}\` to write them out as 0600 files, then start again (docs/keys.md)`,
      );
    const generated: Partial<Record<Purpose, LoadedKey>> = {};
    let created = false;
    for (const p of ['issuer', 'webhook'] as const) {
      const name = p === 'issuer' ? config.logOrigin : 'escrow-settlement-webhook';
      const f = generatedKeyFile(config.dataDir, KEY_FILES[p], () => formatNoteKey(name, newSeed()));
      created ||= f.created;
      generated[p] = keyFromText('DATA_DIR', f.source, f.path, f.text);
    }
    const withOrigin = originFrom(env, config, generated.issuer!, 'DATA_DIR');
    return {
      keys: { issuer: generated.issuer!, webhook: generated.webhook!, exportCommand },
      sources: nodeKeySources({ generateInto: config.dataDir, logOrigin: withOrigin.logOrigin, pkcs11Module }),
      config: withOrigin,
      note: {
        keys: `${created ? 'generated into' : 'from'} ${keysDir(config.dataDir)}`,
        production: 'name the keys: ISSUER_KEY and WEBHOOK_KEY (docs/keys.md)',
      },
    };
  }
  if (issuerSource === undefined) throw new ConfigError('ISSUER_KEY', 'is required when WEBHOOK_KEY is set (file:<path> or pkcs11:<URI>)');
  if (webhookSource === undefined) throw new ConfigError('WEBHOOK_KEY', 'is required when ISSUER_KEY is set (file:<path> or pkcs11:<URI>)');
  const boot = nodeKeySources({ logOrigin: config.logOrigin, pkcs11Module });
  const issuer = await boot.load(issuerSource, 'ISSUER_KEY');
  const webhook = await boot.load(webhookSource, 'WEBHOOK_KEY');
  checkDistinct({ issuer, webhook });
  const withOrigin = originFrom(env, config, issuer, 'ISSUER_KEY');
  return {
    keys: { issuer, webhook, exportCommand },
    sources: nodeKeySources({ logOrigin: withOrigin.logOrigin, pkcs11Module }),
    config: withOrigin,
    note: { keys: { issuer: issuer.source, webhook: webhook.source } },
  };
}

/** A signed-note issuer key's name is the log's origin: equal to LOG_ORIGIN, or LOG_ORIGIN when that is unset. */
function originFrom(env: Env, config: Config, issuer: LoadedKey, variable: string): Config {
  if (issuer.name === undefined || issuer.name === config.logOrigin) return config;
  if (env.LOG_ORIGIN)
    throw new ConfigError(
      variable,
      `the issuer key ${issuer.source ?? ''} is named ${issuer.name}, but LOG_ORIGIN is ${env.LOG_ORIGIN}: a signed-note issuer key's name must be the log's origin`,
    );
  if (/[\s+]/.test(issuer.name) || issuer.name.length > 255)
    throw new ConfigError(variable, `the key name ${JSON.stringify(issuer.name)} cannot be a log origin`);
  return Object.freeze({ ...config, logOrigin: issuer.name });
}

/** Writes a new issuer and webhook key into `dir` (`keys generate`): mode 0600, never over an existing file. */
export function generateKeyFiles(dir: string, issuerName: string): Record<Purpose, string> {
  const out = {} as Record<Purpose, string>;
  for (const p of ['issuer', 'webhook'] as const) {
    const path = join(dir, KEY_FILES[p]);
    try {
      writeNewSecretFile(path, formatNoteKey(p === 'issuer' ? issuerName : 'escrow-settlement-webhook', newSeed()));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new ConfigError(
        '--out',
        code === 'EEXIST' ? `${path} exists: a key is never overwritten` : `cannot write ${path} (${code ?? err})`,
      );
    }
    out[p] = path;
  }
  return out;
}
