#!/usr/bin/env node
// The `escrow-settlement` command (package.json "bin"): `npx escrow-settlement verify bundle.json`.
// It loads the TypeScript CLI through tsx's ESM loader hook, so a checkout needs no build step and the
// CLI runs the very verifier the tests cover. tsx is a devDependency: a published package would point
// "bin" at an esbuild bundle of src/client/cli.ts instead (the same way build.mjs bundles src/main.ts).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/client/cli.ts');
process.exitCode = await main(process.argv.slice(2));
