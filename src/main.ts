// Entry point of the service: `npx tsx src/main.ts`, and what build.mjs bundles. Everything that
// touches the Node runtime lives in src/node/; the core under src/ uses Web APIs only.
import { readArguments } from './node/cli.ts';
import { runArguments } from './node/start.ts';

await runArguments(readArguments(process.argv.slice(2)), process.env);
