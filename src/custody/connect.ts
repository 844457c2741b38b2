// Start-up of chain custody (CUSTODY=chain): refuse anything but a local development chain, pick
// the unlocked dev account, and deploy the escrow contract once per deployment (its address is
// kept in the database, so every instance on that database uses the same contract).
import { ConfigError } from '../errors.ts';
import type { Db } from '../db/types.ts';
import { ESCROW_BYTECODE, ESCROW_SOURCE_SHA256 } from './escrowContract.gen.ts';
import { GAS, readOperator, sendAndWait } from './contract.ts';
import { createChainCustody, type ChainCustody } from './chainCustody.ts';
import { caip2, LOCAL_CHAIN_IDS } from '@escrow-settlement/protocol/chain/mapping';
import { createRpc, type FetchLike, type Rpc } from '@escrow-settlement/protocol/chain/rpc';
import type { Hex } from '@escrow-settlement/protocol/chain/abi';
import type { SandboxFault } from './types.ts';

export interface ChainOptions {
  rpcUrl: string;
  /** An unlocked account of the node (default: eth_accounts[0]). */
  account?: string;
  fetch?: FetchLike;
  confirmTimeoutMs?: number;
  pollMs?: number;
}

export interface ChainProbe {
  rpc: Rpc;
  chainId: number;
  account: Hex;
}

/**
 * Reads eth_chainId and eth_accounts. Throws ConfigError naming CHAIN_RPC_URL when the node cannot
 * be reached or is not a local development chain (31337, 1337): never a public network.
 */
export async function probeChain(opts: ChainOptions): Promise<ChainProbe> {
  const rpc = createRpc(opts.rpcUrl, { fetch: opts.fetch });
  let chainId: number;
  try {
    chainId = Number(BigInt(await rpc.call<string>('eth_chainId')));
  } catch (err) {
    throw new ConfigError('CHAIN_RPC_URL', `cannot read the chain id from ${opts.rpcUrl} (${(err as Error).message})`);
  }
  if (!LOCAL_CHAIN_IDS.includes(chainId)) {
    throw new ConfigError(
      'CHAIN_RPC_URL',
      `chain id ${chainId} is not a local development chain (accepted: ${LOCAL_CHAIN_IDS.join(', ')}); chain custody refuses to start`,
    );
  }
  const accounts = (await rpc.call<string[]>('eth_accounts')).map((a) => a.toLowerCase());
  const wanted = opts.account?.toLowerCase();
  if (wanted !== undefined && !accounts.includes(wanted)) {
    throw new ConfigError('CHAIN_ACCOUNT', `${opts.account} is not an unlocked account of the node at CHAIN_RPC_URL`);
  }
  const account = (wanted ?? accounts[0]) as Hex | undefined;
  if (!account)
    throw new ConfigError('CHAIN_ACCOUNT', 'the node at CHAIN_RPC_URL has no unlocked accounts; start it with dev accounts or name one');
  return { rpc, chainId, account };
}

/**
 * The deployment's escrow contract on this chain: read from the database, or deployed now and
 * recorded. Instances starting together deploy it once.
 */
export async function ensureContract(db: Db, probe: ChainProbe, wait: { confirmTimeoutMs: number; pollMs: number }): Promise<Hex> {
  const { rpc, account } = probe;
  const chain = caip2(probe.chainId);
  return db.tx(async (tx) => {
    // Lock: a transaction-scoped advisory lock per schema — serialises the deploy-or-read, so two
    // instances starting at once deploy one contract; the second waits, then reads the first's row.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':escrow-chain-contract'))`);
    const rows = await tx.query<{ address: Hex }>('SELECT address FROM chain_contracts WHERE chain = $1', [chain]);
    if (rows.length) {
      const address = rows[0].address;
      const code = await rpc.call<string>('eth_getCode', [address, 'latest']);
      if (code === '0x' || code === '') {
        throw new ConfigError(
          'CHAIN_RPC_URL',
          `the escrow contract ${address} this database recorded for ${chain} has no code there (was the dev chain reset?); use that chain again or a fresh database`,
        );
      }
      const operator = await readOperator(rpc, address);
      if (operator !== account)
        throw new ConfigError('CHAIN_ACCOUNT', `the escrow contract ${address} is operated by ${operator}, not ${account}`);
      return address;
    }
    const sent = await sendAndWait(rpc, { from: account, data: ESCROW_BYTECODE, gas: GAS.deploy }, wait);
    const address = sent.receipt?.contractAddress?.toLowerCase() as Hex | undefined;
    if (!sent.receipt || BigInt(sent.receipt.status) !== 1n || !address) {
      throw new ConfigError(
        'CHAIN_RPC_URL',
        `deploying the escrow contract failed (transaction ${sent.hash} ${sent.receipt ? 'reverted' : 'not confirmed'})`,
      );
    }
    await tx.query('INSERT INTO chain_contracts (chain, address, operator, deploy_tx, source_sha256) VALUES ($1, $2, $3, $4, $5)', [
      chain,
      address,
      account,
      sent.hash,
      ESCROW_SOURCE_SHA256,
    ]);
    return address;
  });
}

/**
 * Everything CUSTODY=chain needs at start: the local-chain check, the account, the contract, the
 * adapter. `sandboxFault` spends a pending sandbox fault (src/custody/simulated.ts takeSandboxFault).
 */
export async function connectChainCustody(
  db: Db,
  opts: ChainOptions & { sandboxFault: SandboxFault },
  probed?: ChainProbe,
): Promise<ChainCustody> {
  const probe = probed ?? (await probeChain(opts));
  const wait = { confirmTimeoutMs: opts.confirmTimeoutMs ?? 30_000, pollMs: opts.pollMs ?? 200 };
  const contract = await ensureContract(db, probe, wait);
  return createChainCustody({
    rpc: probe.rpc,
    chainId: probe.chainId,
    contract,
    account: probe.account,
    sandboxFault: opts.sandboxFault,
    ...wait,
  });
}
