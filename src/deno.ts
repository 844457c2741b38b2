// Deno edge: the same core served with Deno.serve (docs/design.md §1: the core is Web APIs only).
// Run: deno run -A src/deno.ts (env as in README.md "Configuration").
import { ConfigError, parseConfig, type Config } from './config.ts';
import { createApp } from './app.ts';
import { openPostgres } from './db/postgres.ts';
import { openPglite } from './db/pglite.ts';
import { migrate } from './db/migrate.ts';
import type { Db } from './db/types.ts';
import { ensureKeys } from './proof/keys.ts';
import { startJobs } from './jobs/index.ts';

// Typed locally so the Node toolchain's tsc needs no Deno type package.
declare const Deno: {
  env: { toObject(): Record<string, string> };
  exit(code: number): never;
  mkdirSync(path: string, opts: { recursive: boolean }): void;
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
  if (config.databaseUrl) return openPostgres(config.databaseUrl);
  if (config.dataDir !== ':memory:') Deno.mkdirSync(config.dataDir, { recursive: true });
  return openPglite(config.dataDir);
}

let config: Config;
try {
  config = parseConfig(Deno.env.toObject());
  // node:cluster is the Node edge's (src/node/cluster.ts): here, run several processes on one DATABASE_URL.
  if (config.workers !== 1)
    throw new ConfigError('WORKERS', 'the Deno edge serves from one process; run several Deno processes on one DATABASE_URL instead');
} catch (e) {
  if (e instanceof ConfigError) {
    log(`bad configuration: ${e.message}`);
    Deno.exit(1);
  }
  throw e;
}
const db = await openStore(config);
await migrate(db);
await ensureKeys(db);
const app = createApp({ db, config, onError: (err, requestId) => log('request failed', { requestId, error: String(err) }) });
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
  log('stopped');
  Deno.exit(0);
};
Deno.addSignalListener('SIGTERM', () => void stop('SIGTERM'));
Deno.addSignalListener('SIGINT', () => void stop('SIGINT'));
