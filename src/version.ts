// The service's version, read from package.json: its one source (esbuild inlines it into the bundle).
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
