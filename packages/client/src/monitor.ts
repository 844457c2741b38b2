// The log monitor (the service's witnessing documentation): follows a service's checkpoint and tiles (c2sp.org/tlog-tiles)
// and checks, for each new checkpoint, the issuer's signature, that its tree contains the last
// checkpoint kept (else the operator is showing different logs to different people: a split view),
// and every new entry (its leaf hash and the issuer's signature on the proof). Web APIs only.
import { canonicalize } from '@escrow-settlement/protocol/crypto/jcs';
import { toHex } from '@escrow-settlement/protocol/crypto/bytes';
import { issuerVkey, verifyCheckpoint } from '@escrow-settlement/protocol/issuer';
import { splitNote } from '@escrow-settlement/protocol/tlog/checkpoint';
import { base64Encode } from '@escrow-settlement/protocol/tlog/encoding';
import { bytesEqual, leafHash } from '@escrow-settlement/protocol/tlog/hash';
import {
  bundleEntries,
  rootFromReader,
  tileHashReader,
  tilePath,
  tileWidthAt,
  TILE_WIDTH,
  type TileRef,
} from '@escrow-settlement/protocol/tlog/tiles';
import { verifyProof } from '@escrow-settlement/protocol/verify';
import type { IssuerKey, Proof } from '@escrow-settlement/protocol/types';

/** What the monitor keeps between checkpoints (the --state file). */
export interface MonitorState {
  origin: string;
  size: number;
  /** Root hash, hex. */
  rootHash: string;
  /** The checkpoint note it was verified from. */
  checkpoint: string;
}

export interface MonitorOptions {
  /** The service's base URL (the log's prefix is `<base>/v1/log/`). */
  baseUrl: string;
  /** The pinned issuer keys (an issuer document's), each with its vkey or origin-derived one. */
  issuerKeys: IssuerKey[];
  fetch?: (req: Request) => Promise<Response>;
}

export type MonitorStep =
  | { ok: true; changed: boolean; state: MonitorState; line: string }
  /** `transient`: the service could not be read (network, a non-200); nothing was shown to be wrong. */
  | { ok: false; transient: boolean; line: string };

class Refusal extends Error {}
class Unreadable extends Error {}

async function get(opts: MonitorOptions, path: string): Promise<Response> {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}${path}`;
  let res: Response;
  try {
    res = await (opts.fetch ?? ((r) => globalThis.fetch(r)))(new Request(url));
  } catch (err) {
    throw new Unreadable(`GET ${path} failed: ${(err as Error).message}`);
  }
  if (res.status !== 200) throw new Unreadable(`GET ${path} answered ${res.status}`);
  return res;
}

/** The checkpoint's issuer signature under one of the pinned keys (the note's origin names the key). */
function checkedCheckpoint(note: string, keys: IssuerKey[]): { origin: string; size: number; root: Uint8Array } {
  let origin: string;
  try {
    origin = splitNote(note).text.split('\n')[0];
  } catch (e) {
    throw new Refusal(`the checkpoint is malformed: ${(e as Error).message}`);
  }
  for (const k of keys) {
    const r = verifyCheckpoint(note, k.vkey ?? issuerVkey(origin, k.publicKey));
    if (r.ok && r.checkpoint) return { origin, size: r.checkpoint.size, root: r.checkpoint.rootHash };
  }
  throw new Refusal(`the checkpoint of ${origin} carries no valid signature by a pinned issuer key`);
}

/** The entries [from, to) of a `size`-leaf log, from its entry bundles. */
async function entriesBetween(opts: MonitorOptions, from: number, to: number, size: number): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (let n = Math.floor(from / TILE_WIDTH); n * TILE_WIDTH < to; n++) {
    const ref: TileRef = { level: 'entries', index: n, width: tileWidthAt(size, 'entries', n) };
    const entries = bundleEntries(new Uint8Array(await (await get(opts, `/v1/log/${tilePath(ref)}`)).arrayBuffer()));
    if (entries.length !== ref.width) throw new Refusal(`entry bundle ${tilePath(ref)} holds ${entries.length} entries, not ${ref.width}`);
    entries.forEach((e, i) => {
      const index = n * TILE_WIDTH + i;
      if (index >= from && index < to) out.push(e);
    });
  }
  return out;
}

/**
 * One look at the log: fetches the checkpoint; if it is new, verifies it against `kept` (the last
 * checkpoint verified, if any) and every entry since, and returns the state to keep. Never throws
 * for what the service sends: a refusal is `ok: false` with the reason.
 */
export async function monitorStep(opts: MonitorOptions, kept: MonitorState | null): Promise<MonitorStep> {
  try {
    const note = await (await get(opts, '/v1/log/checkpoint')).text();
    const cp = checkedCheckpoint(note, opts.issuerKeys);
    if (kept && cp.origin !== kept.origin) throw new Refusal(`the checkpoint's origin ${cp.origin} is not the kept ${kept.origin}`);
    if (kept && cp.size < kept.size) throw new Refusal(`SPLIT VIEW: the log shrank from ${kept.size} to ${cp.size} leaves`);
    if (kept && cp.size === kept.size) {
      if (toHex(cp.root) !== kept.rootHash)
        throw new Refusal(`SPLIT VIEW: two roots signed for size ${cp.size}: kept ${kept.rootHash}, now ${toHex(cp.root)}`);
      return { ok: true, changed: false, state: kept, line: `unchanged ${cp.size}` };
    }
    const from = kept?.size ?? 0;
    const reader = tileHashReader(cp.size, async (t) => new Uint8Array(await (await get(opts, `/v1/log/${tilePath(t)}`)).arrayBuffer()));
    if (!bytesEqual(await rootFromReader(cp.size, reader), cp.root))
      throw new Refusal(`the tiles do not hash to the checkpoint's root at size ${cp.size}`);
    if (kept && toHex(await rootFromReader(kept.size, reader)) !== kept.rootHash) {
      throw new Refusal(`SPLIT VIEW: the ${cp.size}-leaf tree does not contain the kept ${kept.size}-leaf tree (root ${kept.rootHash})`);
    }
    const entries = await entriesBetween(opts, from, cp.size, cp.size);
    const hashes = await reader(entries.map((_, i) => ({ level: 0, index: from + i })));
    const trusted = opts.issuerKeys.map((k) => k.publicKey);
    entries.forEach((e, i) => {
      const index = from + i;
      if (!bytesEqual(leafHash(e), hashes[i]))
        throw new Refusal(`BAD ENTRY ${index}: SHA-256(0x00 || entry) is not the leaf hash in the tile`);
      let proof: Proof;
      try {
        proof = JSON.parse(new TextDecoder().decode(e));
      } catch {
        throw new Refusal(`BAD ENTRY ${index}: not JSON`);
      }
      if (canonicalize(proof) !== new TextDecoder().decode(e)) throw new Refusal(`BAD ENTRY ${index}: not in canonical (JCS) form`);
      let verdict: ReturnType<typeof verifyProof>;
      try {
        verdict = verifyProof(proof, { trustedKeys: trusted });
      } catch (err) {
        throw new Refusal(`BAD ENTRY ${index}: not a proof (${(err as Error).message})`);
      }
      if (!verdict.ok)
        throw new Refusal(
          `BAD ENTRY ${index}: ${verdict.checks
            .filter((c) => !c.ok)
            .map((c) => c.detail)
            .join('; ')}`,
        );
    });
    const cosigs = splitNote(note).signatures.length - 1;
    const line = `checkpoint ${cp.size} ${base64Encode(cp.root)}: ${entries.length} new entries verified, consistent with ${kept ? `the kept ${kept.size}` : 'nothing kept before'}${cosigs > 0 ? `, ${cosigs} cosignature lines` : ''}`;
    return { ok: true, changed: true, state: { origin: cp.origin, size: cp.size, rootHash: toHex(cp.root), checkpoint: note }, line };
  } catch (err) {
    if (err instanceof Unreadable) return { ok: false, transient: true, line: err.message };
    if (err instanceof Refusal) return { ok: false, transient: false, line: err.message };
    return { ok: false, transient: false, line: `the log could not be checked: ${(err as Error).message}` };
  }
}
