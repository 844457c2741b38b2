// The dependency bag every route and command receives: built once per app, never a module singleton.
import type { Config } from './config.ts';
import type { Db } from './db/types.ts';
import type { CustodyAdapter } from './custody/simulated.ts';
import type { RateLimiter } from './access/rateTypes.ts';
import type { AuthCache } from './access/authCache.ts';
import type { ResolveHost, WebhookTransport } from './webhooks/transport.ts';
import type { ProofLog } from './proof/proofLog.ts';
import type { Ap2Trust } from './mandate/ap2.ts';
import type { LogAnchor } from './tlog/anchor.ts';
import type { KeySources, WebhookSigningKeys } from './proof/keys.ts';
import type { ReceiptKey } from './mandate/ap2Receipt.ts';

/** This process's request-log counters (README.md "Configuration", REQUEST_LOG): lines in the current file, rotations so far. */
export interface RequestLogStats {
  lines: number;
  rotations: number;
}

export interface Services {
  db: Db;
  config: Config;
  /** The proofs log's integrator on this instance (closings wait on it; the jobs tick it). */
  proofLog: ProofLog;
  custody: CustodyAdapter;
  version: string;
  startedAt: number;
  /** Wall clock for uptime only; business time comes from the database (svc_now()). */
  nowMs: () => number;
  /** Shared rate budgets; its `rejected` is this process's lifetime 429 count (GET /v1/admin/metrics). */
  rateLimiter: RateLimiter;
  /** Verified minted keys of this instance, checked against the revocation generation (src/access/authCache.ts). */
  authCache: AuthCache;
  /** The request log's counters; zeros when no request log is configured. */
  requestLogStats: () => RequestLogStats;
  /** How webhook POSTs leave the process (default: fetch, src/webhooks/transport.ts; Node: src/node/webhookTransport.ts). */
  webhookTransport?: WebhookTransport;
  /** Registration-time DNS for the webhook SSRF check; absent: only literal IPs and localhost are judged. */
  resolveHost?: ResolveHost;
  /** The webhook keys that sign deliveries while this one is active (src/proof/keys.ts webhookSigningKeys). */
  webhookSigningKeys(activePublicKeyHex: string): Promise<WebhookSigningKeys>;
  /** How this edge loads a key source and makes a new key (issuer rotation; docs/keys.md). */
  keySources: KeySources;
  /** How witness submissions leave the process (default: global fetch; tests route them to in-process witnesses). */
  witnessFetch?: typeof fetch;
  /** What AP2 mandates are checked against (docs/ap2.md §1); null: AP2 is off (no AP2_ISSUERS). */
  ap2: Ap2Trust | null;
  /** Whether the log may grow now, anchored in its witnesses (src/tlog/anchor.ts); also the proof log's gate. */
  anchor: LogAnchor;
  /** The key AP2 Payment Receipts are signed with (docs/ap2.md §7); null when AP2 is off. */
  ap2Receipt: ReceiptKey | null;
}

export { VERSION } from './version.ts';
