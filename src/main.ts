// Entry point of the service: `npx tsx src/main.ts`, and what build.mjs bundles. Everything that
// touches the Node runtime lives in src/node/; the core under src/ uses Web APIs only.
import { run } from './node/start.ts';

run(process.env);
