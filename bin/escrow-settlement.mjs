#!/usr/bin/env node
// The `escrow-settlement` command (package.json "bin"): `npx escrow-settlement verify bundle.json`.
// It loads the TypeScript CLI through tsx's ESM loader hook, so a checkout needs no build step and the
// CLI runs the very verifier the tests cover. The client package (packages/client/, see its README)
// carries the same CLI built to JavaScript as its own bin, also named `escrow-settlement`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('@escrow-settlement/client/cli');
process.exitCode = await main(process.argv.slice(2));
