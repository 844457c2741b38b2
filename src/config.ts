// Configuration: parseConfig(env) turns the environment into one frozen Config (README.md "Configuration"; docs/design.md §6). Pure.
import { parseWitnessSettings, type WitnessSettings } from './config/witness.ts';
import { parseAp2Settings, type Ap2Settings } from './config/ap2.ts';
import { targetSessionAttrs, WRITABLE_SESSION_ATTRS } from './db/sessionAttrs.ts';
import { ConfigError } from './errors.ts';

export interface Config extends WitnessSettings, Ap2Settings {
  /**
   * WITNESS_START (docs/operations.md §3): `wait` (default) holds closings until the witnesses have
   * confirmed the database's newest checkpoint at start or after another server answers;
   * `best-effort` lets them go on meanwhile (a fork is then caught at the next submission).
   */
  witnessStart: 'wait' | 'best-effort';
  port: number;
  host: string;
  databaseUrl?: string;
  dataDir: string;
  apiKey?: string;
  sweepIntervalMs: number;
  webhookBackoffMs: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  /** WEBHOOK_CONCURRENCY: webhook requests in flight per URL, across instances (src/webhooks/sender.ts). */
  webhookConcurrency: number;
  /** WEBHOOK_MAX_URLS_PER_KEY: URLs one key (or root / the open sandbox) may have registered (docs/security.md). */
  webhookMaxUrlsPerKey: number;
  /**
   * WEBHOOK_KEY_MAX_IN_FLIGHT: deliveries one key's URLs together may hold in one sender (in flight
   * or queued behind), out of its 4,096: a key's dead receivers cannot take every slot (src/webhooks/sender.ts).
   */
  webhookKeyMaxInFlight: number;
  /** Seconds a retired webhook key still signs every delivery beside the new one (docs/keys.md "Webhook key rotation"). */
  webhookKeyOverlapSeconds: number;
  /**
   * WEBHOOK_DISABLE_AFTER_HOURS: an endpoint whose every attempt failed for this long (database clock)
   * is disabled until its owner enables it again; 0 never disables (docs/protocol.md §14.5).
   */
  webhookDisableAfterHours: number;
  /** CLIENT_MAX_CONCURRENCY: requests one client address may have open at the Node edge at once (src/node/clientCap.ts). */
  clientMaxConcurrency: number;
  rateLimitWindowMs: number;
  rateLimitMax: number;
  publicRateLimitMax: number;
  verifyRateLimitMax: number;
  requestLog?: string;
  requestLogMaxLines: number;
  trustProxy: boolean;
  logOrigin: string;
  /** Custody adapter: `simulated` (default) or `chain` (a local development EVM chain, src/custody/). */
  custody: 'simulated' | 'chain';
  /** JSON-RPC URL of the local dev chain (required with CUSTODY=chain). */
  chainRpcUrl?: string;
  /** The unlocked dev account that deploys and operates the escrow contract (default: eth_accounts[0]). */
  chainAccount?: string;
  /** How long a chain transaction may take to be mined before the attempt counts as unconfirmed. */
  chainConfirmTimeoutMs: number;
  /** PUBLIC_URL: the absolute base URL clients reach the service at, without a trailing slash (x402 resources). */
  publicUrl: string;
  /** SANDBOX_PUBLIC=1: an open sandbox (no API_KEY) may listen on a non-loopback HOST, on purpose. */
  sandboxPublic: boolean;
  /** How long a closing's response waits for its log leaf to be integrated (LOG_INTEGRATE_WAIT_MS). */
  logIntegrateWaitMs: number;
  /** Browser origins allowed to call the API cross-origin (CORS); none by default (docs/protocol.md §18.5). */
  corsOrigins: string[];
  /** Failed authentication attempts per client IP per window, in the unit `authfail:<ip>`. */
  authFailRateLimitMax: number;
  /**
   * WORKERS: processes serving this instance (1–64), or `auto` for one per core; the Node edge
   * resolves `auto` (the core has no notion of cores) and forks the workers (src/node/cluster.ts).
   */
  workers: number | 'auto';
  /** X402_NETWORK: the CAIP-2 network the x402 facilitator settles on (default escrow:sandbox, docs/x402.md). */
  x402Network: string;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(raw)}`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** A non-negative decimal number of at most `max` (hours may be fractional: 0.5 is half an hour). */
function decimal(env: Env, name: string, def: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d{1,6}(\.\d{1,6})?$/.test(raw.trim()))
    throw new ConfigError(name, `must be a number of hours like 72 or 0.5, got ${JSON.stringify(raw)}`);
  const n = Number(raw.trim());
  if (n > max) throw new ConfigError(name, `must be between 0 and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'on', 'yes'].includes(v)) return true;
  if (['0', 'false', 'off', 'no'].includes(v)) return false;
  throw new ConfigError(name, `must be on/off (true/false, 1/0), got ${JSON.stringify(raw)}`);
}

function backoff(env: Env): number[] {
  const raw = env.WEBHOOK_BACKOFF_MS;
  if (raw === undefined || raw === '') return [1000, 5000, 25000, 60000];
  const parts = raw.split(',').map((s) => s.trim());
  if (parts.length > 20 || parts.some((p) => !/^\d+$/.test(p) || Number(p) > 86_400_000)) {
    throw new ConfigError(
      'WEBHOOK_BACKOFF_MS',
      `must be a comma list of at most 20 waits in ms (each <= 86400000), got ${JSON.stringify(raw)}`,
    );
  }
  return parts.map(Number);
}

function chain(env: Env): Pick<Config, 'custody' | 'chainRpcUrl' | 'chainAccount'> {
  const custody = env.CUSTODY || 'simulated';
  if (custody !== 'simulated' && custody !== 'chain')
    throw new ConfigError('CUSTODY', `must be simulated or chain, got ${JSON.stringify(env.CUSTODY)}`);
  if (custody === 'simulated') return { custody };
  const url = env.CHAIN_RPC_URL;
  if (!url) throw new ConfigError('CHAIN_RPC_URL', 'is required with CUSTODY=chain (the JSON-RPC URL of a local development chain)');
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new ConfigError('CHAIN_RPC_URL', `must be an http(s) URL, got ${JSON.stringify(url)}`);
  const account = env.CHAIN_ACCOUNT || undefined;
  if (account !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(account))
    throw new ConfigError('CHAIN_ACCOUNT', `must be a 0x-prefixed 20-byte hex address, got ${JSON.stringify(account)}`);
  return { custody, chainRpcUrl: url, ...(account ? { chainAccount: account } : {}) };
}

/**
 * WORKERS: 1 (default) is one process, as without the variable; more than one needs DATABASE_URL,
 * since each worker is a process of its own and an embedded PGlite is one process's memory.
 */
function workers(env: Env, databaseUrl: string | undefined): number | 'auto' {
  const raw = env.WORKERS?.trim();
  if (raw === undefined || raw === '') return 1;
  const n: number | 'auto' = raw.toLowerCase() === 'auto' ? 'auto' : /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (n !== 'auto' && !(n >= 1 && n <= 64))
    throw new ConfigError('WORKERS', `must be a whole number from 1 to 64, or auto (one per core), got ${JSON.stringify(env.WORKERS)}`);
  if (n !== 1 && databaseUrl === undefined) {
    throw new ConfigError(
      'WORKERS',
      `${raw} needs DATABASE_URL: the embedded PGlite lives in one process's memory, so several worker processes cannot share it (set DATABASE_URL, or WORKERS=1)`,
    );
  }
  return n;
}

/**
 * PUBLIC_URL (docs/protocol.md §15): an absolute http(s) base URL, no query or fragment; a trailing slash is
 * dropped. Default: the listening address (IPv6 in brackets). Never taken from a request's Host.
 */
function publicUrl(env: Env, host: string, port: number): string {
  const raw = env.PUBLIC_URL;
  if (raw === undefined || raw === '') {
    const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    return `http://${h}:${port}`;
  }
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {
    u = undefined;
  }
  if (
    !u ||
    (u.protocol !== 'http:' && u.protocol !== 'https:') ||
    u.search ||
    u.hash ||
    u.username ||
    u.password ||
    raw.includes('#') ||
    raw.includes('?')
  ) {
    throw new ConfigError(
      'PUBLIC_URL',
      `must be an absolute http(s) URL without credentials, query or fragment, e.g. https://escrow.example.com, got ${JSON.stringify(raw)}`,
    );
  }
  return (u.origin + u.pathname).replace(/\/+$/, '');
}

/** CORS_ORIGINS: a comma list of exact origins (scheme://host[:port]); no wildcard, since keys travel in headers. */
function corsOrigins(env: Env): string[] {
  const raw = env.CORS_ORIGINS;
  if (raw === undefined || raw.trim() === '') return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((o) => {
      let u: URL | undefined;
      try {
        u = new URL(o);
      } catch {
        u = undefined;
      }
      if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== o.replace(/\/$/, '').toLowerCase()) {
        throw new ConfigError(
          'CORS_ORIGINS',
          `must be a comma list of origins like https://app.example.com (scheme, host, optional port; no path or wildcard), got ${JSON.stringify(o)}`,
        );
      }
      return u.origin;
    });
}

/**
 * With PORT=0 the listening port is known only once the server listens: when PUBLIC_URL was not
 * given, its default (the listening address) is rebuilt with the bound port. The edge calls this
 * before it builds the app.
 */
export function withListeningPort(config: Config, env: Env, port: number): Config {
  if (env.PUBLIC_URL) return config;
  return Object.freeze({ ...config, publicUrl: publicUrl({}, config.host, port) });
}

// Exposure (docs/protocol.md §18.1): an open sandbox lets anyone who reaches it create and move escrows,
// so it listens beyond loopback only when SANDBOX_PUBLIC=1 says so. Names that merely resolve to
// loopback are refused too: the check cannot know what a name will resolve to at listen time.
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\]|::ffff:127(\.\d{1,3}){3})$/i;

function exposure(env: Env, host: string, apiKey: string | undefined): boolean {
  const sandboxPublic = bool(env, 'SANDBOX_PUBLIC', false);
  if (apiKey === undefined && !sandboxPublic && !LOOPBACK.test(host)) {
    throw new ConfigError(
      'HOST',
      `${host} is not a loopback address and API_KEY is not set: that would serve an open sandbox to the network; set API_KEY, or SANDBOX_PUBLIC=1 to do it on purpose`,
    );
  }
  return sandboxPublic;
}

/** A CAIP-2 chain id in the escrow namespace: `escrow:` and a reference of 1-32 of [-_a-zA-Z0-9]. */
function x402Network(env: Env): string {
  const raw = env.X402_NETWORK || 'escrow:sandbox';
  if (!/^escrow:[-_a-zA-Z0-9]{1,32}$/.test(raw))
    throw new ConfigError(
      'X402_NETWORK',
      `must be a CAIP-2 network in the escrow namespace, e.g. escrow:sandbox, got ${JSON.stringify(raw)}`,
    );
  return raw;
}

function witnessStart(env: Env): Config['witnessStart'] {
  const raw = env.WITNESS_START;
  if (raw === undefined || raw === '') return 'wait';
  if (raw === 'wait' || raw === 'best-effort') {
    if (!env.WITNESSES?.trim()) throw new ConfigError('WITNESS_START', 'is set but WITNESSES names no witness');
    return raw;
  }
  throw new ConfigError('WITNESS_START', `must be wait or best-effort, got ${JSON.stringify(raw)}`);
}

/**
 * Every variable is read once. An empty variable (`PORT=`) counts as unset, the same for all of
 * them, so `KEY=` lines in env files and compose files fall back to the default instead of failing.
 */
export function parseConfig(env: Env): Config {
  const apiKey = env.API_KEY === '' ? undefined : env.API_KEY;
  if (apiKey !== undefined && apiKey.length < 16) throw new ConfigError('API_KEY', 'must be at least 16 characters');
  // A client sends the key in `Authorization: Bearer <key>`: a header carries only visible ASCII, so
  // any other character (é, a space, a control) would make a key no client could ever present.
  if (apiKey !== undefined && !/^[\x21-\x7e]+$/.test(apiKey))
    throw new ConfigError('API_KEY', 'must be printable ASCII without spaces (characters ! to ~), as an Authorization header can carry');
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
  }
  const attrs = databaseUrl === undefined ? undefined : targetSessionAttrs(databaseUrl);
  if (attrs !== undefined && !(WRITABLE_SESSION_ATTRS as readonly string[]).includes(attrs)) {
    throw new ConfigError(
      'DATABASE_URL',
      `target_session_attrs=${attrs} would let the service use a standby; it writes, so only read-write or primary (the default) are accepted`,
    );
  }
  const dataDir = env.DATA_DIR || './.escrow-data';
  const host = env.HOST || (apiKey ? '0.0.0.0' : '127.0.0.1');
  // With DATABASE_URL and no DATA_DIR there is no data directory to write to: no request log file
  // unless REQUEST_LOG names one, so nothing lands in the working directory (README.md "Configuration", REQUEST_LOG).
  const noDir = dataDir === ':memory:' || (databaseUrl !== undefined && !env.DATA_DIR);
  const requestLog = env.REQUEST_LOG || (noDir ? undefined : `${dataDir.replace(/\/+$/, '')}/requests.log`);
  const logOrigin = env.LOG_ORIGIN || 'escrow-settlement.local/log';
  if (/[\s+]/.test(logOrigin) || logOrigin.length > 255)
    throw new ConfigError('LOG_ORIGIN', 'must be a non-empty line without spaces or "+"');
  const port = int(env, 'PORT', 4280, 0, 65535);
  return Object.freeze({
    port,
    host,
    databaseUrl,
    dataDir,
    apiKey,
    sweepIntervalMs: int(env, 'SWEEP_INTERVAL_MS', 1000, 10, 3_600_000),
    webhookBackoffMs: backoff(env),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 600_000),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', apiKey === undefined),
    webhookConcurrency: int(env, 'WEBHOOK_CONCURRENCY', 8, 1, 256),
    webhookMaxUrlsPerKey: int(env, 'WEBHOOK_MAX_URLS_PER_KEY', 20, 1, 100_000),
    webhookKeyMaxInFlight: int(env, 'WEBHOOK_KEY_MAX_IN_FLIGHT', 256, 1, 4096),
    webhookKeyOverlapSeconds: int(env, 'WEBHOOK_KEY_OVERLAP_SECONDS', 86_400, 0, 31_536_000),
    webhookDisableAfterHours: decimal(env, 'WEBHOOK_DISABLE_AFTER_HOURS', 72, 87_600),
    clientMaxConcurrency: int(env, 'CLIENT_MAX_CONCURRENCY', 64, 1, 1_000_000),
    rateLimitWindowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 100, 86_400_000),
    rateLimitMax: int(env, 'RATE_LIMIT_MAX', 1200, 1, 1e9),
    publicRateLimitMax: int(env, 'PUBLIC_RATE_LIMIT_MAX', 300, 1, 1e9),
    verifyRateLimitMax: int(env, 'VERIFY_RATE_LIMIT_MAX', 60, 1, 1e9),
    requestLog,
    requestLogMaxLines: int(env, 'REQUEST_LOG_MAX_LINES', 100_000, 1, 1e9),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    logOrigin,
    ...chain(env),
    chainConfirmTimeoutMs: int(env, 'CHAIN_CONFIRM_TIMEOUT_MS', 30_000, 100, 600_000),
    publicUrl: publicUrl(env, host, port),
    corsOrigins: corsOrigins(env),
    authFailRateLimitMax: int(env, 'AUTH_FAIL_RATE_LIMIT_MAX', 100, 1, 1e9),
    sandboxPublic: exposure(env, host, apiKey),
    logIntegrateWaitMs: int(env, 'LOG_INTEGRATE_WAIT_MS', 5_000, 0, 600_000),
    workers: workers(env, databaseUrl),
    x402Network: x402Network(env),
    ...parseWitnessSettings(env, (variable, message) => new ConfigError(variable, message)),
    ...parseAp2Settings(env, (variable, message) => new ConfigError(variable, message)),
    witnessStart: witnessStart(env),
  });
}
