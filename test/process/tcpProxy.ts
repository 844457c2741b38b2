// A TCP proxy (node:net) between a started service and its Postgres, to play a database outage:
// cut() stops accepting and drops every open connection (the service sees ECONNRESET on connections
// in use and ECONNREFUSED on new ones, as when the database host goes away); restore() listens again
// on the same port, as when it comes back. drop() ends the open connections only (the server's
// connections die, it stays up), and cancelOn() answers a statement containing a given text as the
// server does when statement_timeout cancels it, without passing it on.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
  /** Destroys every open connection; new ones are still accepted. */
  drop(): void;
  /**
   * The next `times` writes containing `text` are not passed on: the proxy answers them with an
   * ErrorResponse 57014 (query_canceled, what statement_timeout sends) and ReadyForQuery, and the
   * connection goes on. Meant for a write that is one whole query (Parse … Sync).
   */
  cancelOn(text: string, times: number): void;
  /** How many writes cancelOn has answered. */
  readonly cancelled: number;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  };
  let rule: { text: string; left: number } | null = null;
  let cancelled = 0;
  const make = (): Server =>
    createServer((client) => {
      const upstream = connect(target.port, target.host);
      track(client);
      track(upstream);
      client.on('data', (chunk: Buffer) => {
        if (rule && rule.left > 0 && chunk.includes(rule.text)) {
          rule.left--;
          cancelled++;
          client.write(Buffer.concat([statementTimeoutError(), readyForQuery()]));
          return;
        }
        upstream.write(chunk);
      });
      upstream.pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  const listen = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });
  let server: Server | null = make();
  const port = await listen(server, 0);
  const stop = async () => {
    const s = server;
    server = null;
    for (const sock of open) sock.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  return {
    port,
    cut: stop,
    async restore() {
      if (server) return;
      server = make();
      await listen(server, port);
    },
    close: stop,
    drop() {
      for (const sock of open) sock.destroy();
    },
    cancelOn(text, times) {
      rule = { text, left: times };
    },
    get cancelled() {
      return cancelled;
    },
  };
}

/** A backend message: its type byte, its length (itself included) and its body. */
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/** ErrorResponse as Postgres sends it when statement_timeout cancels a statement. */
function statementTimeoutError(): Buffer {
  const fields = [
    ['S', 'ERROR'],
    ['V', 'ERROR'],
    ['C', '57014'],
    ['M', 'canceling statement due to statement timeout'],
  ];
  return message('E', Buffer.from(`${fields.map(([k, v]) => `${k}${v}\0`).join('')}\0`, 'utf8'));
}

/** ReadyForQuery, idle. */
const readyForQuery = () => message('Z', Buffer.from('I', 'latin1'));

/** host and port of a postgres:// URL. */
export function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || 5432) };
}
