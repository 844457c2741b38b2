// The service's configuration variables: name, default and meaning, one entry each. The list is data,
// kept in configVariables.json beside this file; `--help` prints it (src/node/cli.ts) and
// test/config.test.ts checks that every variable src/config.ts reads is there, so the help cannot fall
// behind the code. The README's configuration table says the same at length.
import table from './configVariables.json' with { type: 'json' };

export interface ConfigVariable {
  name: string;
  default: string;
  meaning: string;
}

export const CONFIG_VARIABLES: readonly ConfigVariable[] = table;
