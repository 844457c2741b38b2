// The Node edge's start-up: read the environment once, take DATA_DIR, bind the port, open the store,
// migrate, serve app.fetch, run the background jobs, and stop cleanly on SIGTERM/SIGINT
// (docs/design.md §6). src/main.ts calls run(). Every start-up failure is one line naming the variable
// to fix and exit code 1 (docs/design.md §6); the cheap checks come first, so a port in use or a
// DATA_DIR held by another process is reported before the database is opened.
import cluster from 'node:cluster';
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { liftoffOnlyWanted } from './wasmTiering.ts';
import { parseConfig, withListeningPort, type Config } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { createApp } from '../app.ts';
import { loadAp2Issuers, loadAp2ReceiptKey } from './ap2Files.ts';
import { migrate } from '../db/migrate.ts';
import type { Db } from '../db/types.ts';
import { ensureKeys } from '../proof/keyEras.ts';
import { resolveStartKeys } from './serviceKeys.ts';
import { connectListener, httpBodyMode, nodeListener } from './adapter.ts';
import { answerClientError } from './clientError.ts';
import { MAX_HEADER_LINES, NOSNIFF } from './edgeAnswer.ts';
import { lockDataDir, type DataDirLock } from './dataDirLock.ts';
import { openStore } from './openStore.ts';
import { hasPgliteDb, initDataDirChild, initDataDirInChild, INIT_ENV } from './pgliteInit.ts';
import { makeMemoryDir, sweepMemoryDirs } from './memoryDir.ts';
import { fillFromTemplate, keepAsTemplate } from './memoryTemplate.ts';
import { installPostgresGuard } from './postgresGuard.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { openRequestLog } from './requestLog.ts';
import type { Arguments } from './cli.ts';
import { startJobs } from '../jobs/index.ts';
import { createNodeTransport, nodeResolveHost } from './webhookTransport.ts';
import { connectChainCustody, probeChain } from '../custody/connect.ts';
import { takeSandboxFault } from '../custody/simulated.ts';
import { isReplacement, resolveWorkers, runPrimary, tellPrimary, workerRequestLog, workerSlot } from './cluster.ts';

type Env = Record<string, string | undefined>;
type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** In a worker of WORKERS > 1: its slot and pid on every line it logs, so N workers' lines can be told apart. */
let whoFields: Record<string, unknown> = {};

function log(msg: string, fields: Record<string, unknown> = {}) {
  process.stderr.write(JSON.stringify({ at: new Date().toISOString(), msg, ...whoFields, ...fields }) + '\n');
}

/** Taken before anything else: released on every way out (stop, a failed start). */
let dataDirLock: DataDirLock | undefined;

/** Requests that arrive while the store is still opening: 503, retry in a second. */
const starting: Listener = (_req, res) => {
  const body = JSON.stringify({
    error: { code: 'unavailable', message: 'the service is starting; retry shortly', docsUrl: '/docs/errors#unavailable' },
  });
  res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', 'x-request-id': randomUUID(), ...NOSNIFF });
  res.end(body);
};

/** The accept queue asked for (docs/security.md "The edge"). */
const LISTEN_BACKLOG = 4096;

/** Binds the port; what can go wrong is named after PORT or HOST. */
function listen(server: Server, config: Config): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const where = `${config.host}:${config.port}`;
      if (err.code === 'EADDRINUSE') reject(new ConfigError('PORT', `${where} is already in use by another process`));
      else if (err.code === 'EACCES')
        reject(new ConfigError('PORT', `${where} needs privileges this process does not have (use a port above 1023)`));
      else if (err.code === 'EADDRNOTAVAIL') reject(new ConfigError('HOST', `${config.host} is not an address of this machine`));
      else if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') reject(new ConfigError('HOST', `${config.host} cannot be resolved`));
      else reject(err);
    });
    // A burst of connections waits in the kernel's accept queue, not dropped SYNs: with Node's default
    // of 511, a burst of thousands overflowed it and a dropped connection retried after 1, 3, 7 s
    // (a health probe took 9 s). The kernel clamps this to net.core.somaxconn.
    server.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG }, resolve);
  });
}

/**
 * One process's start-up. `slot` is set in a worker of WORKERS > 1 (src/node/cluster.ts): it writes
 * its own request log `<REQUEST_LOG>.w<slot>`, logs `worker listening` and tells the primary, which
 * prints the instance's one `listening` line. Everything else is the same as a single process.
 */
async function main(env: Env, slot?: number) {
  if (slot !== undefined) whoFields = { slot, pid: process.pid };
  const parsed = parseConfig(env);
  const body = httpBodyMode(env);
  const configured =
    slot !== undefined && parsed.requestLog ? Object.freeze({ ...parsed, requestLog: workerRequestLog(parsed.requestLog, slot) }) : parsed;
  // AP2_ISSUERS is read before anything is opened: a bad file ends the start with one line naming it.
  const ap2Issuers = configured.ap2IssuersSource ? loadAp2Issuers(configured.ap2IssuersSource) : undefined;
  // PGlite's directory: DATA_DIR, or for ':memory:' a throwaway one under os.tmpdir() that the
  // process removes when it exits (memoryDir.ts), after sweeping those of SIGKILLed sandboxes.
  let pgliteDir: string | undefined;
  if (!configured.databaseUrl) {
    // Before PGlite compiles its WebAssembly (wasmTiering.ts): ~50–65 MB less resident memory.
    if (liftoffOnlyWanted(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString('--liftoff-only');
    if (configured.dataDir === ':memory:') {
      sweepMemoryDirs();
      pgliteDir = makeMemoryDir();
    } else {
      pgliteDir = configured.dataDir;
    }
    // One process per DATA_DIR (docs/design.md §7); in a :memory: directory the lock names the owner's
    // pid for the sweep.
    dataDirLock = lockDataDir(pgliteDir);
  }
  // The keys, before the port and the database: a missing, open or malformed key file is one line
  // naming its variable (docs/keys.md). A signed-note issuer key may set the log's origin.
  const nodeKeys = await resolveStartKeys(env, configured);
  const config = nodeKeys.config;
  // Node enforces headersTimeout/requestTimeout only when it checks its connections, every
  // connectionsCheckingInterval (default 30 s): checked each second, a slow-loris socket is closed
  // about 10 s after it connects instead of up to 40 s.
  // requireHostHeader off: a request without Host gets the JSON envelope from the listener
  // (src/node/edgeAnswer.ts), not Node's bare 400; maxHeadersCount is the count it checks against.
  const server = createServer({ connectionsCheckingInterval: 1_000, requireHostHeader: false });
  server.maxHeadersCount = MAX_HEADER_LINES;
  // Slow-loris bounds: headers must arrive within 10 s, a whole request within 60 s.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.on('clientError', answerClientError);
  let serve: Listener = starting;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => serve(req, res));
  // Bound before the store opens: a port in use is reported in milliseconds, not after PGlite's
  // initialisation (which is what made it take 5.7 s). A worker replacing one that died binds only
  // once it can serve: the port is the cluster's, already bound, and until then the other workers
  // take its connections instead of it answering 503 `starting`.
  const replacement = slot !== undefined && isReplacement(env);
  if (!replacement) await listen(server, config);

  // CUSTODY=chain: refuse a chain that is not a local development chain before touching the store.
  const chainOpts =
    config.custody === 'chain'
      ? { rpcUrl: config.chainRpcUrl!, account: config.chainAccount, confirmTimeoutMs: config.chainConfirmTimeoutMs }
      : undefined;
  const probe = chainOpts ? await probeChain(chainOpts) : undefined;
  if (config.databaseUrl) installPostgresGuard(log);
  // A directory without a database yet: initdb and the migrations run in a child process, whose
  // memory leaves with it (pgliteInit.ts); this process then opens it as on a restart.
  let initApplied: number[] = [];
  // :memory: copies this build's template when there is one (memoryTemplate.ts), in ~0.1 s instead of
  // the child's 2–3 s, and keeps one after the child made a fresh directory.
  const memory = config.dataDir === ':memory:' && pgliteDir !== undefined;
  const templated = memory ? fillFromTemplate(pgliteDir!) : undefined;
  if (templated) initApplied = templated;
  if (pgliteDir && !hasPgliteDb(pgliteDir)) {
    try {
      initApplied = (await initDataDirInChild(pgliteDir)) ?? [];
      if (memory && hasPgliteDb(pgliteDir)) keepAsTemplate(pgliteDir, initApplied);
    } catch (err) {
      const where = config.dataDir === ':memory:' ? `the :memory: directory ${pgliteDir}` : config.dataDir;
      throw new ConfigError('DATA_DIR', `cannot create the embedded database in ${where} (${(err as Error).message})`);
    }
  }
  const db: Db = await openStore(pgliteDir ? { ...config, dataDir: pgliteDir } : config);
  const applied = [...initApplied, ...(await migrate(db))];
  const ensured = await ensureKeys(db, nodeKeys.keys, nodeKeys.sources);
  if (ensured.erased > 0)
    log('erased the private keys this database held: the service now signs with the configured keys', {
      erased: ensured.erased,
      note: 'copies of the database made before this start (backups, replicas, WAL archives) still hold them: rotate the issuer key if any may leak (docs/keys.md)',
    });
  const custody = chainOpts ? await connectChainCustody(db, { ...chainOpts, sandboxFault: takeSandboxFault }, probe) : undefined;
  if (custody) log('chain custody', { chain: custody.chain, contract: custody.contract, account: custody.account });
  const requestLog = config.requestLog
    ? openRequestLog(config.requestLog, config.requestLogMaxLines, (err) =>
        log('request log write failed', { path: config.requestLog, error: String(err) }),
      )
    : undefined;
  if (replacement) await listen(server, config);
  // PORT=0: the default PUBLIC_URL (x402 resources, OpenAPI servers) names the port actually bound.
  const bound = server.address();
  const appConfig = typeof bound === 'object' && bound ? withListeningPort(config, env, bound.port) : config;
  // The AP2 receipt key, when AP2 is on: after the store, so a generated one lands in a DATA_DIR PGlite has set up.
  const receipt = ap2Issuers ? loadAp2ReceiptKey(config, env) : undefined;
  if (receipt?.generated)
    log('generated the AP2 receipt key; production should name its own (AP2_RECEIPT_KEY)', { path: receipt.generated });
  const app = createApp({
    db,
    config: appConfig,
    ap2Issuers,
    ap2ReceiptKey: receipt?.secret,
    custody,
    requestLog,
    webhookTransport: createNodeTransport(),
    resolveHost: nodeResolveHost,
    keySources: nodeKeys.sources,
    onError: (err, requestId) =>
      isDatabaseUnavailable(err)
        ? // An outage answers 503 to every request: one line each, not a stack trace each.
          log('database unavailable', { requestId, error: String((err as Error)?.message ?? err) })
        : log('request failed', { requestId, error: String((err as Error)?.stack ?? err) }),
  });
  serve = nodeListener(app, {
    trustProxy: config.trustProxy,
    clientMaxConcurrency: config.clientMaxConcurrency,
    body,
    onError: (err) => log('adapter error', { error: String(err) }),
  });
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
  const fields = {
    url: `http://${config.host}:${port}`,
    mode: config.apiKey ? 'hosted' : 'sandbox',
    store: config.databaseUrl ? 'postgres' : config.dataDir === ':memory:' ? 'pglite (memory)' : `pglite (${config.dataDir})`,
    migrationsApplied: applied,
    requestLog: config.requestLog ?? null,
    ...nodeKeys.note,
  };
  if (slot === undefined) return log('listening', fields);
  // Not `listening`: supervisors wait for that line, which the primary prints once all workers listen.
  log('worker listening', fields);
  await tellPrimary({ escrow: 'listening', fields });
}

/** Starts the service from `env`; a failure ends the process with exit code 1 and one line. */
/**
 * What `src/main.ts` does with its arguments: print the help, refuse in one line (exit 2), run a
 * `keys` subcommand (docs/keys.md), or start the service.
 */
export async function runArguments(args: Arguments, env: Env): Promise<void> {
  if (args.action === 'help') {
    process.stdout.write(args.text);
  } else if (args.action === 'refuse') {
    process.stderr.write(`${args.line}\n`);
    process.exitCode = 2;
  } else if (args.action === 'keys') {
    const { keysCommand } = await import('./keysCommand.ts');
    process.exitCode = await keysCommand(
      args.args,
      env,
      (s) => process.stdout.write(s),
      (s) => process.stderr.write(s),
    );
  } else {
    run(env);
  }
}

export function run(env: Env): void {
  // The initialisation child (pgliteInit.ts): create the database in that directory and exit.
  const initDir = env[INIT_ENV];
  if (initDir) {
    void initDataDirChild(initDir);
    return;
  }
  const slot = workerSlot(env);
  if (slot !== undefined) {
    // A worker's line goes to the primary, which prints the first one only: not N copies of one reason.
    main(env, slot).catch((err) =>
      process.connected ? tellPrimary({ escrow: 'failed', line: failureLine(err) }).then(() => process.exit(1)) : fail(err),
    );
    return;
  }
  // WORKERS > 1: this process is the primary. The configuration is checked here first, so a bad
  // value fails once, with the usual line, before any worker is forked.
  let workers = 1;
  try {
    workers = resolveWorkers(parseConfig(env).workers);
    // Started as a worker of someone else's cluster (pm2's cluster mode): that cluster forks, not us.
    if (workers > 1 && !cluster.isPrimary)
      throw new ConfigError(
        'WORKERS',
        'this process is already a node:cluster worker of another supervisor (pm2 cluster mode?): let that one fork, and set WORKERS=1',
      );
  } catch (err) {
    fail(err);
  }
  if (workers > 1) runPrimary(workers, parseConfig(env));
  else main(env).catch(fail);
}

/**
 * Bad configuration, found by parsing or only at start (port in use, DATABASE_URL unreachable,
 * DATA_DIR held or unwritable, CHAIN_RPC_URL not a local dev chain …): one line naming it.
 */
function failureLine(err: unknown): string {
  return err instanceof ConfigError
    ? `escrow-settlement: bad configuration: ${err.message}\n`
    : `escrow-settlement: start-up failed: ${oneLine(err)}\n`;
}

function fail(err: unknown): never {
  dataDirLock?.release();
  process.stderr.write(failureLine(err));
  process.exit(1);
}

/** The message of an unexpected failure on one line, without its stack. */
function oneLine(err: unknown): string {
  const text =
    err instanceof Error
      ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}`
      : typeof err === 'object'
        ? JSON.stringify(err)
        : String(err);
  return text.replace(/\s*\n\s*/g, ' ');
}
