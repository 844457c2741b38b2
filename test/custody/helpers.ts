// Chain custody test kit: an in-process ganache (127.0.0.1, port 0), and the service's harness
// with the chain adapter as its custody (createApp deps), on PGlite and (when set) real Postgres.
import { after, before, describe } from 'node:test';
import { importChainTool, needsChainTools } from '../chain/tools.ts';
import { parseConfig } from '../../src/config.ts';
import { createApp } from '../../src/app.ts';
import type { Db } from '../../src/db/types.ts';
import { takeSandboxFault, type CustodyAdapter } from '../../src/custody/simulated.ts';
import { connectChainCustody, type ChainOptions } from '../../src/custody/connect.ts';
import type { ChainCustody } from '../../src/custody/chainCustody.ts';
import { createRpc, type Rpc } from '@escrow-settlement/protocol/chain/rpc';
import { openStore, requester, STORES, type Harness, type StoreKind } from '../harness.ts';

export interface Chain {
  url: string;
  rpc: Rpc;
  accounts: string[];
  close(): Promise<void>;
  balance(address: string): Promise<bigint>;
  blockNumber(): Promise<bigint>;
}

/** What these tests use of ganache (installed by npm run install:chain, see test/chain/tools.ts). */
interface Ganache {
  server(opts: object): { listen(port: number, host: string, cb: (err?: Error | null) => void): void; close(): Promise<void> };
}

/** Run or skip (with the install command) the tests that need a ganache chain. */
export const NEEDS_GANACHE = needsChainTools('ganache');

/** A ganache dev chain in this process, listening on 127.0.0.1 (a free port). */
export async function startChain(chainId = 1337): Promise<Chain> {
  const { default: ganache } = await importChainTool<{ default: Ganache }>('ganache');
  const server = ganache.server({ chain: { chainId }, wallet: { deterministic: true }, logging: { quiet: true } });
  await new Promise<void>((resolve, reject) => server.listen(0, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  const addr = (server as unknown as { address(): { port: number } }).address();
  const url = `http://127.0.0.1:${addr.port}`;
  const rpc = createRpc(url);
  return {
    url,
    rpc,
    accounts: await rpc.call<string[]>('eth_accounts'),
    close: () => server.close(),
    balance: async (a) => BigInt(await rpc.call<string>('eth_getBalance', [a, 'latest'])),
    blockNumber: async () => BigInt(await rpc.call<string>('eth_blockNumber')),
  };
}

export interface ChainHarness extends Harness {
  custody: ChainCustody;
}

/** The app on a fresh store, with `wrap(custody)` (default: the chain adapter itself) as its custody. */
export async function chainHarness(
  kind: StoreKind,
  chain: Chain,
  opts: Partial<ChainOptions> & { wrap?: (c: ChainCustody) => CustodyAdapter; db?: Db } = {},
): Promise<ChainHarness> {
  const store = opts.db ? { db: opts.db, drop: async () => {} } : await openStore(kind);
  const custody = await connectChainCustody(store.db, { rpcUrl: chain.url, pollMs: 20, sandboxFault: takeSandboxFault, ...opts });
  const config = parseConfig({ DATA_DIR: ':memory:' });
  const app = createApp({ db: store.db, config, custody: opts.wrap ? opts.wrap(custody) : custody });
  return {
    kind,
    app,
    db: store.db,
    config,
    custody,
    req: requester(app),
    close: store.drop,
  };
}

/** A suite per store, sharing one dev chain; `ctx()` gives the chain and the harness inside tests. */
export function describeChain(title: string, body: (ctx: () => { chain: Chain; h: ChainHarness }) => void) {
  for (const kind of STORES) {
    describe(`${title} [${kind}]`, NEEDS_GANACHE, () => {
      let chain: Chain;
      let h: ChainHarness;
      before(async () => {
        chain = await startChain();
        h = await chainHarness(kind, chain);
      });
      after(async () => {
        await h?.close();
        await chain?.close();
      });
      body(() => ({ chain, h }));
    });
  }
}

/** Wraps a custody so that, when armed, the call after a successful chain operation throws: the
 * closing's (or funding's) database transaction then rolls back although the chain moved — what a
 * crash or a failed COMMIT after the payout looks like to the database. */
export function crashAfterChain(inner: CustodyAdapter) {
  const armed = { settle: false, lock: false };
  const adapter: CustodyAdapter = {
    kind: inner.kind,
    async lock(tx, req) {
      const r = await inner.lock!(tx, req);
      if (armed.lock) {
        armed.lock = false;
        throw new Error('simulated crash after the lock was mined, before COMMIT');
      }
      return r;
    },
    async settle(tx, req) {
      const r = await inner.settle(tx, req);
      if (armed.settle && r.ok) {
        armed.settle = false;
        throw new Error('simulated crash after the payout was mined, before COMMIT');
      }
      return r;
    },
  };
  return { adapter, armed };
}

export const WEI = (micro: bigint) => micro * 1_000_000_000_000n;
