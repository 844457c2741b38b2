#!/usr/bin/env node
// The package's command (package.json "bin": escrow-verify): `npx escrow-verify verify bundle.json --trusted-key HEX`.
import { main } from './cli.ts';

process.exitCode = await main(process.argv.slice(2));
