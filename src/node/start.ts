// The Node edge's start-up: read the environment once, take DATA_DIR, bind the port, open the store,
// migrate, serve app.fetch, run the background jobs, and stop cleanly on SIGTERM/SIGINT
// (CONTRACT §1). src/main.ts calls run(). Every start-up failure is one line naming the variable
// to fix and exit code 1 (issue 17 item 7); the cheap checks come first, so a port in use or a
// DATA_DIR held by another process is reported before the database is opened.
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ConfigError, parseConfig, withListeningPort, type Config } from '../config.ts';
import { createApp } from '../app.ts';
import { migrate } from '../db/migrate.ts';
import type { Db } from '../db/types.ts';
import { ensureKeys } from '../domain/keys.ts';
import { connectListener, nodeListener } from './adapter.ts';
import { answerClientError } from './clientError.ts';
import { lockDataDir, type DataDirLock } from './dataDirLock.ts';
import { openStore } from './openStore.ts';
import { installPostgresGuard } from './postgresGuard.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { openRequestLog } from './requestLog.ts';
import { startJobs } from '../jobs/index.ts';
import { createNodeTransport, nodeResolveHost } from './webhookTransport.ts';
import { connectChainCustody, probeChain } from '../custody/connect.ts';
import { takeSandboxFault } from '../domain/custody.ts';

type Env = Record<string, string | undefined>;
type Listener = (req: IncomingMessage, res: ServerResponse) => void;

function log(msg: string, fields: Record<string, unknown> = {}) {
  process.stderr.write(JSON.stringify({ at: new Date().toISOString(), msg, ...fields }) + '\n');
}

/** Taken before anything else: released on every way out (stop, a failed start). */
let dataDirLock: DataDirLock | undefined;

/** Requests that arrive while the store is still opening: 503, retry in a second. */
const starting: Listener = (_req, res) => {
  const body = JSON.stringify({ error: { code: 'unavailable', message: 'the service is starting; retry shortly', docsUrl: '/docs/errors#unavailable' } });
  res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', 'x-request-id': randomUUID() });
  res.end(body);
};

/** Binds the port; what can go wrong is named after PORT or HOST. */
function listen(server: Server, config: Config): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const where = `${config.host}:${config.port}`;
      if (err.code === 'EADDRINUSE') reject(new ConfigError('PORT', `${where} is already in use by another process`));
      else if (err.code === 'EACCES') reject(new ConfigError('PORT', `${where} needs privileges this process does not have (use a port above 1023)`));
      else if (err.code === 'EADDRNOTAVAIL') reject(new ConfigError('HOST', `${config.host} is not an address of this machine`));
      else if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') reject(new ConfigError('HOST', `${config.host} cannot be resolved`));
      else reject(err);
    });
    server.listen(config.port, config.host, resolve);
  });
}

async function main(env: Env) {
  const config = parseConfig(env);
  // PGlite in a directory: one process per DATA_DIR (issue 17 item 5).
  if (!config.databaseUrl && config.dataDir !== ':memory:') dataDirLock = lockDataDir(config.dataDir);
  // Node enforces headersTimeout/requestTimeout only when it checks its connections, every
  // connectionsCheckingInterval (default 30 s): checked each second, a slow-loris socket is closed
  // about 10 s after it connects instead of up to 40 s.
  const server = createServer({ connectionsCheckingInterval: 1_000 });
  // Slow-loris bounds: headers must arrive within 10 s, a whole request within 60 s.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.on('clientError', answerClientError);
  let serve: Listener = starting;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => serve(req, res));
  // Bound before the store opens: a port in use is reported in milliseconds, not after PGlite's
  // initialisation (which is what made it take 5.7 s).
  await listen(server, config);

  // CUSTODY=chain: refuse a chain that is not a local development chain before touching the store.
  const chainOpts = config.custody === 'chain'
    ? { rpcUrl: config.chainRpcUrl!, account: config.chainAccount, confirmTimeoutMs: config.chainConfirmTimeoutMs }
    : undefined;
  const probe = chainOpts ? await probeChain(chainOpts) : undefined;
  if (config.databaseUrl) installPostgresGuard(log);
  const db: Db = await openStore(config);
  const applied = await migrate(db);
  await ensureKeys(db);
  const custody = chainOpts ? await connectChainCustody(db, { ...chainOpts, sandboxFault: takeSandboxFault }, probe) : undefined;
  if (custody) log('chain custody', { chain: custody.chain, contract: custody.contract, account: custody.account });
  const requestLog = config.requestLog
    ? openRequestLog(config.requestLog, config.requestLogMaxLines, (err) => log('request log write failed', { path: config.requestLog, error: String(err) }))
    : undefined;
  // PORT=0: the default PUBLIC_URL (x402 resources, OpenAPI servers) names the port actually bound.
  const bound = server.address();
  const appConfig = typeof bound === 'object' && bound ? withListeningPort(config, env, bound.port) : config;
  const app = createApp({ db, config: appConfig, custody, requestLog, webhookTransport: createNodeTransport(), resolveHost: nodeResolveHost, onError: (err, requestId) => (isDatabaseUnavailable(err)
    // An outage answers 503 to every request: one line each, not a stack trace each.
    ? log('database unavailable', { requestId, error: String((err as Error)?.message ?? err) })
    : log('request failed', { requestId, error: String((err as Error)?.stack ?? err) })) });
  serve = nodeListener(app, { trustProxy: config.trustProxy, onError: (err) => log('adapter error', { error: String(err) }) });
  // CONNECT never reaches the request listener: answer it with the core's 405, not a dropped socket.
  server.on('connect', connectListener(app));
  const jobs = startJobs(app.svc, { log });
  // Handlers before the 'listening' line: a supervisor may signal as soon as it reads it, and until
  // process.on() is called the signal's default action ends the process without a clean stop.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('stopping', { signal });
    // Stop accepting; in-flight requests finish; idle keep-alive sockets close now.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await jobs.stop();
    await closed;
    await requestLog?.close();
    await db.close();
    dataDirLock?.release();
    log('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  log('listening', {
    url: `http://${config.host}:${port}`,
    mode: config.apiKey ? 'hosted' : 'sandbox',
    store: config.databaseUrl ? 'postgres' : config.dataDir === ':memory:' ? 'pglite (memory)' : `pglite (${config.dataDir})`,
    migrationsApplied: applied,
    requestLog: config.requestLog ?? null,
  });
}

/** Starts the service from `env`; a failure ends the process with exit code 1 and one line. */
export function run(env: Env): void {
  main(env).catch(fail);
}

function fail(err: unknown): never {
  dataDirLock?.release();
  // Bad configuration, found by parsing or only at start (port in use, DATABASE_URL unreachable,
  // DATA_DIR held or unwritable, CHAIN_RPC_URL not a local dev chain …): one line naming it.
  if (err instanceof ConfigError) process.stderr.write(`escrow-settlement: bad configuration: ${err.message}\n`);
  else process.stderr.write(`escrow-settlement: start-up failed: ${oneLine(err)}\n`);
  process.exit(1);
}

/** The message of an unexpected failure on one line, without its stack. */
function oneLine(err: unknown): string {
  const text = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : typeof err === 'object' ? JSON.stringify(err) : String(err);
  return text.replace(/\s*\n\s*/g, ' ');
}
