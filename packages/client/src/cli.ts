// The auditor's command line: `escrow-settlement verify <bundle.json> --trusted-key HEX` (a Node edge file).
import { readFileSync } from 'node:fs';
import { isHex64 } from '@escrow-settlement/protocol/crypto/bytes';
import { issuerDocumentKeys } from '@escrow-settlement/protocol/issuer';
import { verifyBundle } from '@escrow-settlement/protocol/verify';
import { parseWitnessKey } from '@escrow-settlement/protocol/tlog/cosignature';
import { ap2Issuers as parseAp2Issuers } from '@escrow-settlement/protocol/ap2/chain';
import { runMonitor } from './monitorCli.ts';

export const USAGE = `usage: escrow-settlement verify <bundle.json | -> (--trusted-key HEX ... | --issuer-doc FILE | --trust-bundle-keys) [--witness VKEY ... [--quorum K]] [--ap2-issuers FILE]
       escrow-settlement monitor <base URL> --issuer-doc FILE [--state FILE] [--once] [--interval-ms N]
       escrow-settlement mcp --url URL [--api-key K] [--key-file F]   MCP tools over stdio
       escrow-settlement help | --help       this text
       escrow-settlement --version           the client package's version

Verifies an offline bundle (GET /v1/proofs/{id}/bundle) with no network: the proof's issuer
signature and key, the evidence trail, the log inclusion, the signed tree head, each party
signature the closing relied on, and the verdict re-run from the terms (verdict.replay; every
check with a bundle fetched with ?disclose=payload), against issuer keys you trust. Without one
of these the bundle is not valid (issuer.trust fails):
--trusted-key HEX      pin an issuer public key (repeatable); signers must be among the pinned keys.
--issuer-doc FILE      pin every key of an issuer document (/.well-known/proof-issuer.json) you
                       fetched and kept; repeatable, combines with --trusted-key.
--trust-bundle-keys    trust the keys inside the bundle itself (prints a warning: anyone can make
                       a bundle that passes this way).
--witness VKEY         pin a witness (its verifier key, name+hash+base64: Ed25519 type 0x04 or ML-DSA-44 type 0x06); repeatable.
                       The bundle's checkpoint must then carry --quorum valid cosignatures.
--quorum K             cosignatures needed from distinct pinned witnesses (default: all of them).
--ap2-issuers FILE     pin the AP2 issuers' keys (a JWKS of P-256 keys by kid): a matter created under an
                       AP2 Payment Mandate verifies only when its chain verifies with one of them.
The monitor follows the log's checkpoints and tiles (see the service's witnessing documentation) and exits non-zero on
a split view or a bad entry; --state keeps the last checkpoint it verified between runs.
Prints one PASS/FAIL line per check, then the net payouts (PAYOUTS payee …, payer …, fee …) when the proof carries them; exits 0 when all pass, 1 on any failure, 2 on a usage error.`;

/** issuer.trust's failure in this command's own words (the library's names its options). */
const HOW_TO_PIN =
  'no trusted issuer key given: pin the issuer with --issuer-doc FILE (a saved /.well-known/proof-issuer.json fetched out of band) or --trusted-key HEX, or pass --trust-bundle-keys to accept the keys the bundle carries (self-consistency only)';

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
  witnesses?: string[];
  quorum?: number;
  ap2Issuers?: unknown;
}

function parseArgs(argv: string[]): Args | string {
  const [command, ...rest] = argv;
  if (command !== 'verify') return command === undefined ? 'missing command' : `unknown command ${JSON.stringify(command)}`;
  const files: string[] = [];
  const keys: string[] = [];
  const witnesses: string[] = [];
  let quorum: number | undefined;
  let trustBundleKeys = false;
  let ap2Issuers: unknown;
  // --name VALUE or --name=VALUE; undefined when the option is something else.
  const value = (a: string, name: string, i: number): [string | undefined, number] | undefined =>
    a === name ? [rest[i + 1], i + 1] : a.startsWith(`${name}=`) ? [a.slice(name.length + 1), i] : undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    const key = value(a, '--trusted-key', i);
    const doc = value(a, '--issuer-doc', i);
    const witness = value(a, '--witness', i);
    const q = value(a, '--quorum', i);
    const ap2 = value(a, '--ap2-issuers', i);
    if (ap2) {
      const [file, next] = ap2;
      if (!file) return '--ap2-issuers needs a file';
      try {
        ap2Issuers = JSON.parse(readFileSync(file, 'utf8'));
        parseAp2Issuers(ap2Issuers, file);
      } catch (e) {
        return `--ap2-issuers ${file}: ${(e as Error).message}`;
      }
      i = next;
    } else if (witness) {
      const [v, next] = witness;
      try {
        parseWitnessKey(v ?? '');
      } catch (e) {
        return `--witness needs a witness verifier key (name+hash+base64 of a type 0x04 Ed25519 or 0x06 ML-DSA-44 key), got ${JSON.stringify(v ?? '')}: ${(e as Error).message}`;
      }
      witnesses.push(v!);
      i = next;
    } else if (q) {
      const [v, next] = q;
      if (!/^[1-9][0-9]{0,5}$/.test(v ?? '')) return `--quorum needs a whole number of at least 1, got ${JSON.stringify(v ?? '')}`;
      quorum = Number(v);
      i = next;
    } else if (key) {
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
  if (quorum !== undefined && witnesses.length === 0) return '--quorum needs at least one --witness';
  if (quorum !== undefined && quorum > new Set(witnesses).size)
    return `--quorum ${quorum} is more than the ${new Set(witnesses).size} witnesses given`;
  return {
    file: files[0],
    ...(keys.length ? { trustedKeys: keys } : {}),
    ...(trustBundleKeys ? { trustBundleKeys } : {}),
    ...(witnesses.length ? { witnesses } : {}),
    ...(quorum !== undefined ? { quorum } : {}),
    ...(ap2Issuers !== undefined ? { ap2Issuers } : {}),
  };
}

/** The version in the client's package.json: one level above src/ in the repository and above dist/ when installed. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** Runs the CLI and returns the exit code (the caller sets it, so stdout is flushed before exit). */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  // The MCP server loads the MCP SDK (an optional peer dependency) only when asked for.
  if (argv[0] === 'mcp') {
    let mcp: typeof import('./mcp/cli.ts');
    try {
      mcp = await import('./mcp/cli.ts');
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' || !String(e).includes('@modelcontextprotocol/sdk')) throw e;
      io.err(
        'escrow-settlement mcp: the MCP server needs @modelcontextprotocol/sdk, an optional peer dependency of this package: npm install @modelcontextprotocol/sdk',
      );
      return 2;
    }
    return mcp.mcpMain(argv.slice(1), io);
  }
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    io.out(USAGE);
    return 0;
  }
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === 'version')) {
    io.out(`escrow-settlement ${packageVersion()} (@escrow-settlement/client)`);
    return 0;
  }
  if (argv[0] === 'monitor') return runMonitor(argv.slice(1), io);
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
  const { ok, checks, warnings, payouts } = verifyBundle(bundle as Parameters<typeof verifyBundle>[0], {
    trustedKeys: args.trustedKeys,
    trustBundleKeys: args.trustBundleKeys,
    witnesses: args.witnesses,
    quorum: args.quorum,
    ap2Issuers: args.ap2Issuers,
  });
  for (const w of warnings ?? []) io.err(`escrow-settlement: WARNING: ${w}`);
  for (const c of checks) io.out(`${c.ok ? 'PASS' : 'FAIL'} ${c.name}: ${c.name === 'issuer.trust' && !c.ok ? HOW_TO_PIN : c.detail}`);
  const failed = checks.filter((c) => !c.ok).length;
  // Where the money ended: the closing's payouts less any refunds after release (the service's protocol documentation, §24.7).
  if (payouts) io.out(`PAYOUTS payee ${payouts.payee}, payer ${payouts.payer}, fee ${payouts.fee} (net of refunds after release)`);
  io.out(ok ? `OK: all ${checks.length} checks passed` : `FAILED: ${failed} of ${checks.length} checks failed`);
  return ok ? 0 : 1;
}
