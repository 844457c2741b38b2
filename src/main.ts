// Entry point of the service: `npx tsx src/main.ts`, and what build.mjs bundles. Everything that
// touches the Node runtime lives in src/node/; the core under src/ uses Web APIs only.
import { readArguments } from './node/cli.ts';
import { run } from './node/start.ts';

const args = readArguments(process.argv.slice(2));
if (args.action === 'help') {
  process.stdout.write(args.text);
} else if (args.action === 'refuse') {
  process.stderr.write(`${args.line}\n`);
  process.exitCode = 2;
} else if (args.action === 'keys') {
  const { keysCommand } = await import('./node/keysCommand.ts');
  process.exitCode = await keysCommand(
    args.args,
    process.env,
    (s) => process.stdout.write(s),
    (s) => process.stderr.write(s),
  );
} else {
  run(process.env);
}
