// The Node edge's start-up: read the environment once, open the store, migrate, serve app.fetch, run
// the background jobs, and stop cleanly on SIGTERM/SIGINT (CONTRACT §1). src/main.ts calls run().
import { createServer } from 'node:http';
import { mkdirSync } from 'node:fs';
import { ConfigError, parseConfig, type Config } from '../config.ts';
import { createApp } from '../app.ts';
import { openPostgres } from '../db/postgres.ts';
import { openPglite } from '../db/pglite.ts';
import { migrate } from '../db/migrate.ts';
import type { Db } from '../db/types.ts';
import { ensureKeys } from '../domain/keys.ts';
import { nodeListener } from './adapter.ts';
import { openRequestLog } from './requestLog.ts';
import { startJobs } from '../jobs/index.ts';
import { createNodeTransport, nodeResolveHost } from './webhookTransport.ts';
import { connectChainCustody, probeChain } from '../custody/connect.ts';
import { takeSandboxFault } from '../domain/custody.ts';

function log(msg: string, fields: Record<string, unknown> = {}) {
  process.stderr.write(JSON.stringify({ at: new Date().toISOString(), msg, ...fields }) + '\n');
}

async function openStore(config: Config): Promise<Db> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl);
  if (config.dataDir !== ':memory:') mkdirSync(config.dataDir, { recursive: true });
  return openPglite(config.dataDir);
}

async function main(env: Record<string, string | undefined>) {
  let config: Config;
  try {
    config = parseConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`escrow-settlement: bad configuration: ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  // CUSTODY=chain: refuse a chain that is not a local development chain before touching the store.
  const chainOpts = config.custody === 'chain'
    ? { rpcUrl: config.chainRpcUrl!, account: config.chainAccount, confirmTimeoutMs: config.chainConfirmTimeoutMs }
    : undefined;
  const probe = chainOpts ? await probeChain(chainOpts) : undefined;
  const db = await openStore(config);
  const applied = await migrate(db);
  await ensureKeys(db);
  const custody = chainOpts ? await connectChainCustody(db, { ...chainOpts, sandboxFault: takeSandboxFault }, probe) : undefined;
  if (custody) log('chain custody', { chain: custody.chain, contract: custody.contract, account: custody.account });
  const requestLog = config.requestLog
    ? openRequestLog(config.requestLog, config.requestLogMaxLines, (err) => log('request log write failed', { path: config.requestLog, error: String(err) }))
    : undefined;
  const app = createApp({ db, config, custody, requestLog, webhookTransport: createNodeTransport(), resolveHost: nodeResolveHost, onError: (err, requestId) => log('request failed', { requestId, error: String((err as Error)?.stack ?? err) }) });
  // Node enforces headersTimeout/requestTimeout only when it checks its connections, every
  // connectionsCheckingInterval (default 30 s): checked each second, a slow-loris socket is closed
  // about 10 s after it connects instead of up to 40 s.
  const server = createServer({ connectionsCheckingInterval: 1_000 }, nodeListener(app, { trustProxy: config.trustProxy, onError: (err) => log('adapter error', { error: String(err) }) }));
  // Slow-loris bounds: headers must arrive within 10 s, a whole request within 60 s.
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  const jobs = startJobs(app.svc, { log });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  log('listening', {
    url: `http://${config.host}:${port}`,
    mode: config.apiKey ? 'hosted' : 'sandbox',
    store: config.databaseUrl ? 'postgres' : config.dataDir === ':memory:' ? 'pglite (memory)' : `pglite (${config.dataDir})`,
    migrationsApplied: applied,
  });

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
    log('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** Starts the service from `env`; a failure ends the process with exit code 1. */
export function run(env: Record<string, string | undefined>): void {
  main(env).catch(fail);
}

function fail(err: unknown): never {
  // A configuration found bad only at start (CHAIN_RPC_URL not a local dev chain …): one line naming it.
  if (err instanceof ConfigError) {
    process.stderr.write(`escrow-settlement: bad configuration: ${err.message}\n`);
    process.exit(1);
  }
  log('start-up failed', { error: String((err as Error)?.stack ?? err) });
  process.exit(1);
}
