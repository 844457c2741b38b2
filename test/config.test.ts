import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../src/config.ts';
import { ConfigError } from '../src/errors.ts';
import { CONFIG_VARIABLES } from '../src/configVariables.ts';
import { helpText, readArguments } from '../src/node/cli.ts';

test('defaults follow docs/protocol.md §18.1 for an open sandbox', () => {
  const c = parseConfig({});
  assert.equal(c.port, 4280);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.dataDir, './.escrow-data');
  assert.equal(c.requestLog, './.escrow-data/requests.log');
  assert.deepEqual(c.webhookBackoffMs, [1000, 5000, 25000, 60000]);
  assert.equal(c.webhookAllowPrivate, true);
  assert.equal(c.sweepIntervalMs, 1000);
  assert.equal(c.rateLimitMax, 1200);
  assert.equal(c.publicRateLimitMax, 300);
  assert.equal(c.verifyRateLimitMax, 60);
  assert.equal(c.trustProxy, false);
  assert.ok(Object.isFrozen(c));
});

test('an API key switches to hosted defaults: all interfaces, private webhooks refused', () => {
  const c = parseConfig({ API_KEY: 'k'.repeat(20) });
  assert.equal(c.host, '0.0.0.0');
  assert.equal(c.webhookAllowPrivate, false);
});

test(':memory: keeps no request log unless one is named', () => {
  assert.equal(parseConfig({ DATA_DIR: ':memory:' }).requestLog, undefined);
  assert.equal(parseConfig({ DATA_DIR: ':memory:', REQUEST_LOG: '/tmp/r.log' }).requestLog, '/tmp/r.log');
});

const bad: Array<[Record<string, string>, string]> = [
  [{ PORT: 'abc' }, 'PORT'],
  [{ PORT: '70000' }, 'PORT'],
  [{ SWEEP_INTERVAL_MS: '-5' }, 'SWEEP_INTERVAL_MS'],
  [{ WEBHOOK_BACKOFF_MS: '1000,x' }, 'WEBHOOK_BACKOFF_MS'],
  [{ WEBHOOK_TIMEOUT_MS: '1.5' }, 'WEBHOOK_TIMEOUT_MS'],
  [{ WEBHOOK_ALLOW_PRIVATE: 'maybe' }, 'WEBHOOK_ALLOW_PRIVATE'],
  [{ TRUST_PROXY: '2' }, 'TRUST_PROXY'],
  [{ RATE_LIMIT_MAX: '0' }, 'RATE_LIMIT_MAX'],
  [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
  [{ DATABASE_URL: 'postgres://h1:5432,h2:5433/db?target_session_attrs=any' }, 'DATABASE_URL'],
  [{ DATABASE_URL: 'postgres://h1:5432,h2:5433/db?target_session_attrs=prefer-standby' }, 'DATABASE_URL'],
  [{ WITNESS_START: 'later' }, 'WITNESS_START'],
  [{ WITNESS_START: 'best-effort' }, 'WITNESS_START'],
  [{ API_KEY: 'short' }, 'API_KEY'],
  [{ REQUEST_LOG_MAX_LINES: 'lots' }, 'REQUEST_LOG_MAX_LINES'],
  [{ WEBHOOK_DISABLE_AFTER_HOURS: '-1' }, 'WEBHOOK_DISABLE_AFTER_HOURS'],
  [{ WEBHOOK_DISABLE_AFTER_HOURS: '3 days' }, 'WEBHOOK_DISABLE_AFTER_HOURS'],
  [{ WEBHOOK_DISABLE_AFTER_HOURS: '1e3' }, 'WEBHOOK_DISABLE_AFTER_HOURS'],
  [{ WEBHOOK_DISABLE_AFTER_HOURS: '100000' }, 'WEBHOOK_DISABLE_AFTER_HOURS'],
];

test('WEBHOOK_DISABLE_AFTER_HOURS: 72 by default, fractional hours taken, 0 (never) taken', () => {
  assert.equal(parseConfig({}).webhookDisableAfterHours, 72);
  assert.equal(parseConfig({ WEBHOOK_DISABLE_AFTER_HOURS: '0.5' }).webhookDisableAfterHours, 0.5);
  assert.equal(parseConfig({ WEBHOOK_DISABLE_AFTER_HOURS: '0' }).webhookDisableAfterHours, 0);
});
for (const [env, variable] of bad) {
  test(`a bad ${variable} stops start-up with a message naming it`, () => {
    assert.throws(
      () => parseConfig(env),
      (e: unknown) => e instanceof ConfigError && e.variable === variable && e.message.startsWith(`${variable}:`),
    );
  });
}

test('DATABASE_URL names several hosts in libpq form; target_session_attrs, when given, asks for a writable primary', () => {
  for (const url of [
    'postgres://u@h1:5432,h2:5433/db',
    'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write',
    'postgresql://u@h1,h2/db?sslmode=disable&target_session_attrs=primary',
  ])
    assert.equal(parseConfig({ DATABASE_URL: url, DATA_DIR: ':memory:' }).databaseUrl, url);
  assert.throws(
    () => parseConfig({ DATABASE_URL: 'postgres://h1,h2/db?target_session_attrs=standby' }),
    /target_session_attrs=standby would let the service use a standby/,
  );
});

test('WITNESS_START: wait by default; best-effort only with witnesses (test/witness/anchor.test.ts has them)', () => {
  assert.equal(parseConfig({}).witnessStart, 'wait');
  assert.throws(() => parseConfig({ WITNESS_START: 'best-effort' }), /WITNESS_START: is set but WITNESSES names no witness/);
});

test('WEBHOOK_BACKOFF_MS gives the waits between attempts', () => {
  assert.deepEqual(parseConfig({ WEBHOOK_BACKOFF_MS: '10, 20,30' }).webhookBackoffMs, [10, 20, 30]);
});

test('WORKERS: 1 by default (empty is unset), 1–64 or auto; more than one needs DATABASE_URL', () => {
  const pg = 'postgres://db/escrow';
  assert.equal(parseConfig({}).workers, 1);
  assert.equal(parseConfig({ WORKERS: '' }).workers, 1, 'empty is unset');
  assert.equal(parseConfig({ WORKERS: '1' }).workers, 1, 'one worker is one process: no DATABASE_URL needed');
  assert.equal(parseConfig({ WORKERS: '2', DATABASE_URL: pg }).workers, 2);
  assert.equal(parseConfig({ WORKERS: ' 64 ', DATABASE_URL: pg }).workers, 64);
  assert.equal(parseConfig({ WORKERS: 'auto', DATABASE_URL: pg }).workers, 'auto', 'auto is resolved by the Node edge');
  assert.equal(parseConfig({ WORKERS: 'AUTO', DATABASE_URL: pg }).workers, 'auto');
  const refused = (env: Record<string, string>, pattern: RegExp) =>
    assert.throws(
      () => parseConfig(env),
      (e: unknown) => e instanceof ConfigError && e.variable === 'WORKERS' && pattern.test(e.message) && !e.message.includes('\n'),
    );
  for (const v of ['0', '65', 'abc', '-1', '1.5', '2x', 'auto2'])
    refused({ WORKERS: v, DATABASE_URL: pg }, /^WORKERS: must be a whole number from 1 to 64, or auto/);
  refused({ WORKERS: '2' }, /^WORKERS: 2 needs DATABASE_URL: the embedded PGlite lives in one process's memory/);
  refused({ WORKERS: 'auto', DATA_DIR: ':memory:' }, /^WORKERS: auto needs DATABASE_URL/);
});

test('API_KEY must be printable ASCII without spaces: a key an Authorization header can carry', () => {
  for (const key of ['ünïcödé-kéy-12345678', 'a key with spaces 1234', 'tab\there-1234567890', 'k'.repeat(16) + '\u00a0']) {
    assert.throws(
      () => parseConfig({ API_KEY: key }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'API_KEY' && /printable ASCII/.test(e.message),
      JSON.stringify(key),
    );
  }
  assert.equal(parseConfig({ API_KEY: '!~azAZ09-._+/=' + 'k'.repeat(4) }).apiKey, '!~azAZ09-._+/=kkkk');
});

test('every variable the configuration reads is in the configuration table that --help prints, and only those', () => {
  // src/config.ts, the witness and AP2 settings it includes, the postgres.js options the Node edge reads, its HTTP_BODY, and the key variables.
  const source = [
    '../src/config.ts',
    '../src/config/witness.ts',
    '../src/config/ap2.ts',
    '../src/db/pgOptions.ts',
    '../src/node/adapter.ts',
    '../src/node/serviceKeys.ts',
  ]
    .map((f) => readFileSync(new URL(f, import.meta.url), 'utf8'))
    .join('\n');
  const read = new Set(
    [
      ...source.matchAll(
        /env\.([A-Z][A-Z0-9_]+)|(?:int|bool|onOff|decimal)\(env, '([A-Z][A-Z0-9_]+)'|(?:ConfigError|fail)\('([A-Z][A-Z0-9_]+)'/g,
      ),
    ].map((m) => m[1] ?? m[2] ?? m[3]),
  );
  const table = CONFIG_VARIABLES.map((v) => v.name);
  assert.equal(new Set(table).size, table.length, 'no variable twice');
  assert.deepEqual([...read].sort(), [...table].sort());
  const help = helpText();
  for (const v of CONFIG_VARIABLES) assert.match(help, new RegExp(`^  ${v.name} +\\S.*\\(default: `, 'm'), v.name);
  // One default a line: the meaning never states a second one (PG_PLAN_CACHE once did).
  for (const v of CONFIG_VARIABLES) {
    const line = help.split('\n').find((l) => l.startsWith(`  ${v.name} `))!;
    assert.equal(line.split('default').length - 1, 1, line);
  }
});

test('arguments: none starts, --help/-h/help print the table, anything else is refused in one line naming it', () => {
  assert.deepEqual(readArguments([]), { action: 'start' });
  for (const a of ['--help', '-h', 'help']) assert.equal(readArguments([a]).action, 'help');
  const port = readArguments(['--port', '4290']);
  assert.equal(port.action, 'refuse');
  assert.match(
    (port as { line: string }).line,
    /^escrow-settlement: unknown argument "--port": .*set PORT=… in the environment instead \(see --help\)$/,
  );
  const other = readArguments(['--verbose']);
  assert.doesNotMatch((other as { line: string }).line, /set .*=…/, 'no variable is suggested for an argument that names none');
  assert.equal(readArguments(['--help', '--port']).action, 'refuse');
});

test('AP2: AP2_ISSUERS is a file: source, AP2_PISP exactly {legal_name, brand_name, domain_name}; each refusal names its variable', () => {
  const c = parseConfig({
    AP2_ISSUERS: 'file:/etc/ap2/issuers.json',
    AP2_PISP: '{"legal_name":"L","brand_name":"B","domain_name":"d.example"}',
  });
  assert.equal(c.ap2IssuersSource, 'file:/etc/ap2/issuers.json');
  assert.deepEqual(c.ap2Pisp, { legal_name: 'L', brand_name: 'B', domain_name: 'd.example' });
  assert.equal(parseConfig({}).ap2IssuersSource, undefined);
  assert.equal(parseConfig({}).ap2Pisp, null);
  for (const [env, variable] of [
    [{ AP2_ISSUERS: '/etc/ap2/issuers.json' }, 'AP2_ISSUERS'],
    [{ AP2_ISSUERS: 'file:' }, 'AP2_ISSUERS'],
    [{ AP2_PISP: '{"legal_name":"L","brand_name":"B"}' }, 'AP2_PISP'],
    [{ AP2_PISP: '{"legal_name":"L","brand_name":"B","domain_name":"d","extra":"x"}' }, 'AP2_PISP'],
    [{ AP2_PISP: 'not json' }, 'AP2_PISP'],
    [{ AP2_AUDIENCE: 'has space' }, 'AP2_AUDIENCE'],
  ] as const) {
    assert.throws(
      () => parseConfig(env),
      (e: unknown) => e instanceof ConfigError && e.variable === variable,
      JSON.stringify(env),
    );
  }
});
