// Throwaway Postgres servers for the failover case: a primary and a synchronous streaming standby
// on loopback, each in a temp directory on a free port, made with the server's own tools (initdb,
// pg_basebackup -R, pg_ctl). Postgres refuses to run as root, so when the test runs as root the
// tools run as the `postgres` user (runuser) in directories it owns.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin', '/usr/local/bin'];

/** The directory holding initdb, pg_ctl and pg_basebackup, or null when this machine has none. */
export function pgBinDir(): string | null {
  for (const d of BIN_DIRS) if (['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].every((b) => existsSync(join(d, b)))) return d;
  return null;
}

/** Why the cluster cannot run here (no binaries, root without a postgres user), or null. */
export function clusterUnavailable(): string | null {
  if (!pgBinDir()) return 'no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup)';
  if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) return 'running as root without a postgres user';
  return null;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Owner {
  uid: number;
  gid: number;
}

function owner(): Owner | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

export interface PgNode {
  port: number;
  dir: string;
  logFile: string;
  /** The server's log so far. */
  log(): string;
  /** The postmaster's pid (from postmaster.pid), or null when it is not running. */
  pid(): number | null;
}

export interface PgCluster {
  primary: PgNode;
  standby: PgNode;
  /** The libpq multi-host URL of `database` on both: primary first. */
  url(database: string): string;
  /** SIGKILLs the primary's postmaster (its backends die with it). */
  killPrimary(): void;
  /** `pg_ctl promote -w` on the standby. */
  promote(): void;
  /** Runs psql against a node; returns its output (unaligned, tuples only). */
  psql(node: PgNode, database: string, sql: string): string;
  stop(): void;
}

export async function startCluster(tag: string): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries');
  const own = owner();
  const root = mkdtempSync(join(tmpdir(), `escrow-${tag}-`));
  if (own) chownSync(root, own.uid, own.gid);
  const as = (cmd: string, args: string[], opts: { allowFail?: boolean } = {}) => {
    const full = own ? ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    const r = spawnSync(full[0] as string, full[1] as string[], { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0 && !opts.allowFail) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const node = (name: string, port: number): PgNode => {
    const dir = join(root, name);
    const logFile = join(root, `${name}.log`);
    return {
      port,
      dir,
      logFile,
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      pid: () => {
        const f = join(dir, 'postmaster.pid');
        return existsSync(f) ? Number(readFileSync(f, 'utf8').split('\n')[0]) : null;
      },
    };
  };
  const primary = node('primary', await freePort());
  const standby = node('standby', await freePort());
  const conf = (n: PgNode, extra: string) =>
    appendFileSync(
      join(n.dir, 'postgresql.conf'),
      `
port = ${n.port}
listen_addresses = '127.0.0.1'
unix_socket_directories = '${root}'
max_connections = 200
shared_buffers = 32MB
fsync = on
log_line_prefix = '%m [%p] app=%a '
log_min_messages = warning
log_min_error_statement = error
${extra}
`,
    );
  as('initdb', ['-D', primary.dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  // The standby is named in synchronous_standby_names: a commit returns only once the standby has
  // flushed it (synchronous_commit = on), so no acknowledged write is lost when the primary dies.
  conf(
    primary,
    `wal_level = replica
max_wal_senders = 5
synchronous_commit = on
synchronous_standby_names = 'standby1'`,
  );
  as('pg_ctl', ['-D', primary.dir, '-l', primary.logFile, '-w', '-t', '60', 'start']);
  // pg_basebackup -R writes standby.signal and primary_conninfo (with application_name, the name
  // synchronous_standby_names waits for).
  as('pg_basebackup', [
    '-d',
    `host=127.0.0.1 port=${primary.port} user=postgres application_name=standby1`,
    '-D',
    standby.dir,
    '-R',
    '-X',
    'stream',
    '--no-sync',
  ]);
  // pg_basebackup copied the primary's postgresql.conf. Once promoted, the standby is alone: if it
  // kept waiting for a synchronous standby named standby1, every commit would hang.
  conf(standby, `hot_standby = on\nsynchronous_standby_names = ''`);
  as('pg_ctl', ['-D', standby.dir, '-l', standby.logFile, '-w', '-t', '60', 'start']);
  const psql = (n: PgNode, database: string, sql: string) =>
    as('psql', ['-h', '127.0.0.1', '-p', String(n.port), '-U', 'postgres', '-d', database, '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql]);
  // Wait until the standby streams synchronously.
  const t0 = Date.now();
  while (psql(primary, 'postgres', "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'").trim() !== 'sync') {
    if (Date.now() - t0 > 60_000) throw new Error(`the standby never became synchronous:\n${standby.log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    primary,
    standby,
    url: (database) =>
      `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/${database}?target_session_attrs=read-write`,
    killPrimary() {
      // The postmaster and every process it started, at once: what a lost machine looks like to
      // the clients (no backend lingers to finish what it was doing).
      const pid = primary.pid();
      if (!pid) return;
      const children = readdirSync('/proc')
        .filter((d) => /^[0-9]+$/.test(d))
        .filter((d) => {
          try {
            return (
              Number(
                readFileSync(`/proc/${d}/stat`, 'utf8')
                  .replace(/^.*\) /s, '')
                  .split(' ')[1],
              ) === pid
            );
          } catch {
            return false;
          }
        })
        .map(Number);
      for (const p of [pid, ...children]) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {}
      }
    },
    promote() {
      as('pg_ctl', ['-D', standby.dir, '-w', '-t', '60', 'promote']);
    },
    psql,
    stop() {
      for (const n of [primary, standby]) {
        if (n.pid() !== null) as('pg_ctl', ['-D', n.dir, '-m', 'immediate', '-w', 'stop'], { allowFail: true });
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Writes a file the postgres user can read (for psql -f as that user). */
export function writeShared(path: string, text: string): void {
  writeFileSync(path, text);
  const own = owner();
  if (own) chownSync(path, own.uid, own.gid);
}
