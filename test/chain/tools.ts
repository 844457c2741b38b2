// The chain and wallet tooling (ganache, solc, x402 v1) lives in test/chain/node_modules, installed
// by `npm run install:chain`, not by the root `npm install`: it is most of a gigabyte that the
// sandbox and the other tests never load. Imports made from this file resolve there first (then in
// the root node_modules, where an older checkout may still have them). Without it the tests that need
// it skip, naming the command; where CI is set they fail, since CI must run them.
import { createRequire } from 'node:module';

export const INSTALL_CHAIN = 'npm run install:chain';

const resolver = createRequire(import.meta.url);

/** Whether `name` can be loaded from here. */
export function hasChainTool(name: string): boolean {
  try {
    resolver.resolve(`${name}/package.json`);
    return true;
  } catch (e) {
    // Found, but its "exports" do not list package.json (x402 does this): it is installed.
    return (e as NodeJS.ErrnoException).code === 'ERR_PACKAGE_PATH_NOT_EXPORTED';
  }
}

/** Options for node:test: run when every tool is there, else skip with the install command (fail where CI is set). */
export function needsChainTools(...names: string[]): { skip?: string } {
  const missing = names.filter((n) => !hasChainTool(n));
  if (!missing.length) return {};
  const msg = `${missing.join(', ')} not installed (chain tooling): ${INSTALL_CHAIN}`;
  if (process.env.CI) throw new Error(`CI is set and ${msg}`);
  return { skip: msg };
}

/**
 * Imports a module of the tooling, resolved from test/chain/. The specifier goes through a variable
 * so the type checker does not need the package installed; callers state the shape they use.
 */
export async function importChainTool<T>(specifier: string): Promise<T> {
  const spec: string = specifier;
  return (await import(spec)) as T;
}

/** A CommonJS tool (solc) loaded from test/chain/. */
export const requireChainTool = <T>(name: string): T => resolver(name) as T;
