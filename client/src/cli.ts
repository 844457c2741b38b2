// The auditor's command line: `escrow-settlement verify <bundle.json> --trusted-key HEX` (a Node edge file).
import { readFileSync } from 'node:fs';
import { isHex64 } from './crypto/bytes.ts';
import { issuerDocumentKeys } from './issuer.ts';
import { verifyBundle } from './verify.ts';

export const USAGE = `usage: escrow-settlement verify <bundle.json | -> (--trusted-key HEX ... | --issuer-doc FILE | --trust-bundle-keys)
       escrow-settlement help | --help       this text
       escrow-settlement --version           the client package's version

Verifies an offline bundle (GET /v1/proofs/{id}/bundle) with no network: the proof's issuer
signature and key, the evidence trail, the log inclusion, the signed tree head and each party
signature the closing relied on, against issuer keys you trust. Give at least one of:
--trusted-key HEX      pin an issuer public key (repeatable); signers must be among the pinned keys.
--issuer-doc FILE      pin every key of an issuer document (/.well-known/proof-issuer.json) you
                       fetched and kept; repeatable, combines with --trusted-key.
--trust-bundle-keys    trust the keys inside the bundle itself (prints a warning: anyone can make
                       a bundle that passes this way).
Prints one PASS/FAIL line per check; exits 0 when all pass, 1 on any failure, 2 on a usage error.`;

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

const stdio: Io = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

interface Args {
  file: string;
  trustedKeys?: string[];
  trustBundleKeys?: boolean;
}

function parseArgs(argv: string[]): Args | string {
  const [command, ...rest] = argv;
  if (command !== 'verify') return command === undefined ? 'missing command' : `unknown command ${JSON.stringify(command)}`;
  const files: string[] = [];
  const keys: string[] = [];
  let trustBundleKeys = false;
  // --name VALUE or --name=VALUE; undefined when the option is something else.
  const value = (a: string, name: string, i: number): [string | undefined, number] | undefined =>
    a === name ? [rest[i + 1], i + 1] : a.startsWith(`${name}=`) ? [a.slice(name.length + 1), i] : undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    const key = value(a, '--trusted-key', i);
    const doc = value(a, '--issuer-doc', i);
    if (key) {
      const [v, next] = key;
      if (!isHex64(v)) return `--trusted-key needs a 64-character lowercase hex public key, got ${JSON.stringify(v ?? '')}`;
      keys.push(v);
      i = next;
    } else if (doc) {
      const [file, next] = doc;
      if (!file) return '--issuer-doc needs a file';
      let parsed: unknown;
      try {
        parsed = JSON.parse(readFileSync(file, 'utf8'));
      } catch (e) {
        return `--issuer-doc ${file}: ${(e as Error).message}`;
      }
      try {
        keys.push(...issuerDocumentKeys(parsed).map((k) => k.publicKey));
      } catch (e) {
        return `--issuer-doc ${file}: ${(e as Error).message}`;
      }
      i = next;
    } else if (a === '--trust-bundle-keys') {
      trustBundleKeys = true;
    } else if (a.startsWith('--') && a !== '--') {
      return `unknown option ${a}`;
    } else {
      files.push(a);
    }
  }
  if (files.length !== 1) return files.length === 0 ? 'missing bundle file' : 'give exactly one bundle file';
  if (trustBundleKeys && keys.length) return '--trust-bundle-keys cannot be combined with --trusted-key or --issuer-doc';
  return { file: files[0], ...(keys.length ? { trustedKeys: keys } : {}), ...(trustBundleKeys ? { trustBundleKeys } : {}) };
}

/** The version in the client's package.json: one level above src/ in the repository and above dist/ when installed. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** Runs the CLI and returns the exit code (the caller sets it, so stdout is flushed before exit). */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    io.out(USAGE);
    return 0;
  }
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === 'version')) {
    io.out(`escrow-settlement ${packageVersion()} (@escrow-settlement/client)`);
    return 0;
  }
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    io.err(`escrow-settlement: ${args}\n${USAGE}`);
    return 2;
  }
  let text: string;
  try {
    text = readFileSync(args.file === '-' ? 0 : args.file, 'utf8');
  } catch (e) {
    io.out(`FAIL bundle.read: cannot read ${args.file}: ${(e as Error).message}`);
    return 1;
  }
  let bundle: unknown;
  try {
    bundle = JSON.parse(text);
  } catch (e) {
    io.out(`FAIL bundle.format: ${args.file} is not valid JSON: ${(e as Error).message}`);
    return 1;
  }
  const { ok, checks, warnings } = verifyBundle(bundle as Parameters<typeof verifyBundle>[0], { trustedKeys: args.trustedKeys, trustBundleKeys: args.trustBundleKeys });
  for (const w of warnings ?? []) io.err(`escrow-settlement: WARNING: ${w}`);
  for (const c of checks) io.out(`${c.ok ? 'PASS' : 'FAIL'} ${c.name}: ${c.detail}`);
  const failed = checks.filter((c) => !c.ok).length;
  io.out(ok ? `OK: all ${checks.length} checks passed` : `FAILED: ${failed} of ${checks.length} checks failed`);
  return ok ? 0 : 1;
}
