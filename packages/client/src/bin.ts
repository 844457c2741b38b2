#!/usr/bin/env node
// The package's command (package.json "bin": escrow-settlement): `npx escrow-settlement verify bundle.json --trusted-key HEX`.
import { main } from './cli.ts';

process.exitCode = await main(process.argv.slice(2));
