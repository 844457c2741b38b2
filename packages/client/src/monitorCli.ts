// `escrow-settlement monitor <base URL> --issuer-doc FILE [--state FILE] [--once] [--interval-ms N]`
// (a Node edge file): runs monitorStep in a loop, prints one line per new checkpoint, keeps the
// last verified checkpoint in --state, and exits 1 on a split view or a bad entry (the service's witnessing documentation).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { issuerDocumentKeys } from '@escrow-settlement/protocol/issuer';
import { monitorStep, type MonitorOptions, type MonitorState } from './monitor.ts';
import type { IssuerKey } from '@escrow-settlement/protocol/types';

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

interface MonitorArgs {
  baseUrl: string;
  issuerKeys: IssuerKey[];
  stateFile?: string;
  once: boolean;
  intervalMs: number;
}

function parse(argv: string[]): MonitorArgs | string {
  const urls: string[] = [];
  let doc: string | undefined;
  let stateFile: string | undefined;
  let once = false;
  let intervalMs = 5000;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [name, inline] =
      a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const take = () => inline ?? argv[++i];
    if (name === '--issuer-doc') doc = take();
    else if (name === '--state') stateFile = take();
    else if (name === '--once') once = true;
    else if (name === '--interval-ms') {
      const v = take();
      if (!/^[1-9][0-9]{0,8}$/.test(v ?? '')) return `--interval-ms needs a whole number of milliseconds, got ${JSON.stringify(v ?? '')}`;
      intervalMs = Number(v);
    } else if (a.startsWith('--')) return `unknown option ${a}`;
    else urls.push(a);
  }
  if (urls.length !== 1) return 'give exactly one base URL';
  try {
    const u = new URL(urls[0]);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    return `the base URL must be an absolute http(s) URL, got ${JSON.stringify(urls[0])}`;
  }
  if (!doc) return 'monitor needs --issuer-doc FILE (the issuer document you pinned)';
  let issuerKeys: IssuerKey[];
  try {
    issuerKeys = issuerDocumentKeys(JSON.parse(readFileSync(doc, 'utf8')));
  } catch (e) {
    return `--issuer-doc ${doc}: ${(e as Error).message}`;
  }
  return { baseUrl: urls[0], issuerKeys, stateFile, once, intervalMs };
}

function readState(file: string): MonitorState | null | string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return `--state ${file}: ${(e as Error).message}`;
  }
  try {
    const s = JSON.parse(text) as MonitorState;
    if (
      typeof s.origin !== 'string' ||
      !Number.isSafeInteger(s.size) ||
      !/^[0-9a-f]{64}$/.test(s.rootHash) ||
      typeof s.checkpoint !== 'string'
    )
      throw new Error('not a monitor state');
    return s;
  } catch (e) {
    return `--state ${file}: ${(e as Error).message}`;
  }
}

/** Replaces the state file in one rename, so a crash never leaves half a state. */
function writeState(file: string, s: MonitorState): void {
  writeFileSync(`${file}.tmp`, `${JSON.stringify(s, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/** Runs the monitor; resolves with the exit code. `fetch` and `signal` are for tests and embedding. */
export async function runMonitor(
  argv: string[],
  io: Io,
  opts: { fetch?: MonitorOptions['fetch']; signal?: AbortSignal } = {},
): Promise<number> {
  const args = parse(argv);
  if (typeof args === 'string') {
    io.err(`escrow-settlement monitor: ${args}`);
    return 2;
  }
  let kept: MonitorState | null = null;
  if (args.stateFile) {
    const s = readState(args.stateFile);
    if (typeof s === 'string') {
      io.err(`escrow-settlement monitor: ${s}`);
      return 2;
    }
    kept = s;
  }
  for (;;) {
    const step = await monitorStep({ baseUrl: args.baseUrl, issuerKeys: args.issuerKeys, fetch: opts.fetch }, kept);
    if (step.ok) {
      if (step.changed || args.once) io.out(`OK ${step.line}`);
      kept = step.state;
      if (step.changed && args.stateFile) writeState(args.stateFile, kept);
    } else if (step.transient && !args.once) {
      io.err(`escrow-settlement monitor: WARNING ${step.line} (retrying)`);
    } else {
      io.out(`FAIL ${step.line}`);
      return 1;
    }
    if (args.once || opts.signal?.aborted) return 0;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, args.intervalMs);
      opts.signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          resolve();
        },
        { once: true },
      );
    });
    if (opts.signal?.aborted) return 0;
  }
}
