// The service's configuration variables: name, default and meaning, in one list. `--help` prints it
// (src/node/cli.ts) and test/config.test.ts checks that every variable src/config.ts reads is here,
// so the help cannot fall behind the code. The README's configuration table says the same at length.

export interface ConfigVariable {
  name: string;
  default: string;
  meaning: string;
}

export const CONFIG_VARIABLES: readonly ConfigVariable[] = [
  { name: 'PORT', default: '4280', meaning: 'listening port (0 picks a free one)' },
  {
    name: 'HOST',
    default: '127.0.0.1 (0.0.0.0 with API_KEY)',
    meaning: 'listening address; without API_KEY only a loopback address unless SANDBOX_PUBLIC=1',
  },
  { name: 'SANDBOX_PUBLIC', default: 'off', meaning: '1: serve an open sandbox (no API_KEY) on a non-loopback HOST, on purpose' },
  { name: 'DATABASE_URL', default: 'none', meaning: 'postgres://… (TCP or Unix socket); without it the embedded PGlite is used' },
  { name: 'DATA_DIR', default: './.escrow-data', meaning: "PGlite's data directory (one process at a time); :memory: keeps nothing" },
  {
    name: 'API_KEY',
    default: 'none',
    meaning: 'the root key (16+ printable ASCII characters, no spaces); setting it makes the deployment hosted',
  },
  { name: 'WORKERS', default: '1', meaning: '1-64 or auto: processes serving this instance; more than one needs DATABASE_URL' },
  {
    name: 'PUBLIC_URL',
    default: 'http://HOST:PORT',
    meaning: 'absolute http(s) base URL clients reach the service at (x402 resources, OpenAPI servers)',
  },
  { name: 'CORS_ORIGINS', default: 'none', meaning: 'comma list of exact origins allowed to call the API from a browser' },
  { name: 'TRUST_PROXY', default: 'off', meaning: 'on: the client IP is the first X-Forwarded-For hop' },
  { name: 'SWEEP_INTERVAL_MS', default: '1000', meaning: 'how often each instance looks for expired deadlines' },
  { name: 'WEBHOOK_BACKOFF_MS', default: '1000,5000,25000,60000', meaning: 'waits between webhook attempts' },
  { name: 'WEBHOOK_TIMEOUT_MS', default: '10000', meaning: 'a webhook attempt that takes longer has failed' },
  { name: 'WEBHOOK_ALLOW_PRIVATE', default: 'on in the sandbox, off hosted', meaning: 'allow loopback/private webhook targets' },
  { name: 'WEBHOOK_CONCURRENCY', default: '8', meaning: 'webhook requests in flight per URL over all instances (1-256)' },
  { name: 'WEBHOOK_MAX_URLS_PER_KEY', default: '20', meaning: 'webhook URLs one key (or root, or the open sandbox) may have registered' },
  {
    name: 'WEBHOOK_KEY_MAX_IN_FLIGHT',
    default: '256',
    meaning: "deliveries one key's URLs together may hold in one sender (the fair share)",
  },
  { name: 'CLIENT_MAX_CONCURRENCY', default: '64', meaning: 'requests one client address may have open at once (429 beyond)' },
  { name: 'X402_NETWORK', default: 'escrow:sandbox', meaning: "the x402 facilitator's CAIP-2 network (escrow:<1-32 characters>)" },
  { name: 'WITNESSES', default: 'none', meaning: 'comma list of <witness vkey>=<submission URL prefix> that cosign checkpoints' },
  { name: 'WITNESS_QUORUM', default: 'all listed', meaning: 'cosignatures a checkpoint needs before GET /v1/log/checkpoint serves it' },
  { name: 'WITNESS_INTERVAL_MS', default: '1000', meaning: 'at most one submission per witness per this interval' },
  { name: 'PG_PREPARE', default: 'on', meaning: 'off: unnamed statements in postgres.js (no prepared statement kept per connection)' },
  {
    name: 'PG_PLAN_CACHE',
    default: 'generic',
    meaning: "auto: Postgres's own choice of custom or generic plans (default: plan_cache_mode force_generic_plan)",
  },
  { name: 'RATE_LIMIT_WINDOW_MS', default: '60000', meaning: 'rate-limit window' },
  { name: 'RATE_LIMIT_MAX', default: '1200', meaning: 'requests per key per window' },
  { name: 'PUBLIC_RATE_LIMIT_MAX', default: '300', meaning: 'requests per IP per window on the public log routes' },
  { name: 'VERIFY_RATE_LIMIT_MAX', default: '60', meaning: 'requests per IP per window on POST /v1/verify' },
  { name: 'AUTH_FAIL_RATE_LIMIT_MAX', default: '100', meaning: 'failed authentications per client IP per window' },
  {
    name: 'REQUEST_LOG',
    default: 'DATA_DIR/requests.log',
    meaning: 'JSON-lines request log (none with :memory:, or with DATABASE_URL and no DATA_DIR)',
  },
  { name: 'REQUEST_LOG_MAX_LINES', default: '100000', meaning: 'rotate the request log after this many lines' },
  { name: 'LOG_ORIGIN', default: 'escrow-settlement.local/log', meaning: "origin line of the transparency log's checkpoint" },
  { name: 'LOG_INTEGRATE_WAIT_MS', default: '5000', meaning: "how long a closing's response waits for its log leaf to be integrated" },
  { name: 'CUSTODY', default: 'simulated', meaning: 'simulated, or chain for the escrow contract on a local dev chain' },
  {
    name: 'CHAIN_RPC_URL',
    default: 'none',
    meaning: 'JSON-RPC URL of a local dev chain (chain id 31337 or 1337; required with CUSTODY=chain)',
  },
  { name: 'CHAIN_ACCOUNT', default: "the node's eth_accounts[0]", meaning: 'unlocked dev account that deploys and operates the contract' },
  { name: 'CHAIN_CONFIRM_TIMEOUT_MS', default: '30000', meaning: 'a chain transaction not mined within this is an unconfirmed attempt' },
];
