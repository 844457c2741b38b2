// The service's command line: it takes no arguments, only environment variables
// (PORT=4290 npx tsx src/main.ts), except the `keys` command (src/node/keysCommand.ts: generate key
// files, export an earlier version's keys). `--help` prints them and exits 0; anything else is refused
// with one line and exit code 2, so `--port 4290` never starts a service on another port than the
// one the operator asked for. Every way of starting it (tsx, the bundle, the Docker image, the
// systemd unit) goes through src/main.ts, so they all answer the same.
import { CONFIG_VARIABLES } from '../configVariables.ts';

/** The `--help` text: usage and the configuration table, one variable a line. */
export function helpText(): string {
  const width = Math.max(...CONFIG_VARIABLES.map((v) => v.name.length));
  const rows = CONFIG_VARIABLES.map((v) => `  ${v.name.padEnd(width)}  ${v.meaning} (default: ${v.default})`);
  return [
    'escrow-settlement: the escrow settlement service.',
    '',
    'Usage: [VARIABLE=value ...] escrow-settlement   (npx tsx src/main.ts, or node dist/escrow-settlement.mjs)',
    '',
    'It takes no arguments: it is configured by environment variables. An empty value counts as unset.',
    '',
    'Keys (docs/keys.md):',
    '  keys generate --out DIR [--name LOG_ORIGIN]   write a new issuer and webhook key (mode 0600) for ISSUER_KEY/WEBHOOK_KEY',
    '  keys export --out DIR                         write out the keys an earlier version kept in the database',
    '',
    ...rows,
    '',
  ].join('\n');
}

/** What to do with the arguments: start, print the help, or refuse with one line (exit code 2). */
export type Arguments = ReturnType<typeof readArguments>;

export function readArguments(
  argv: readonly string[],
): { action: 'start' } | { action: 'help'; text: string } | { action: 'refuse'; line: string } | { action: 'keys'; args: string[] } {
  if (argv.length === 0) return { action: 'start' };
  if (argv[0] === 'keys') return { action: 'keys', args: argv.slice(1) };
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help')) return { action: 'help', text: helpText() };
  const first = argv[0];
  const variable = /^--([a-z][a-z0-9-]*)(=.*)?$/.exec(first);
  const known = variable && CONFIG_VARIABLES.find((v) => v.name === variable[1].toUpperCase().replaceAll('-', '_'));
  const hint = known ? `; set ${known.name}=… in the environment instead` : '';
  return {
    action: 'refuse',
    line: `escrow-settlement: unknown argument ${JSON.stringify(first)}: the service takes no arguments, only environment variables${hint} (see --help)`,
  };
}
