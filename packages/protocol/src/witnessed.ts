// A bundle's witnessed checkpoint (the service's witnessing documentation): the C2SP tlog-proof text (c2sp.org/tlog-proof)
// carrying the proof's leaf index, its inclusion path and the checkpoint with its cosignatures, and
// the checks verifyBundle runs on it: the issuer's signature, K valid cosignatures from the witnesses
// the caller pins, and the proof's leaf in that checkpoint's tree. Web APIs only.
import { fromHex } from './crypto/bytes.ts';
import { verify } from './crypto/ed25519.ts';
import { base64Decode, base64Encode } from './tlog/encoding.ts';
import { noteKeyHash, parseCheckpoint, splitNote, verifyNote } from './tlog/checkpoint.ts';
import { countCosignatures, parseWitnessKey } from './tlog/cosignature.ts';
import { bytesEqual } from './tlog/hash.ts';
import { verifyInclusion } from './tlog/verify.ts';
import type { Bundle, Check } from './types.ts';

const HEADER = 'c2sp.org/tlog-proof@v1';

export interface LogProof {
  index: number;
  path: Uint8Array[];
  /** The checkpoint signed note, with any cosignature lines. */
  checkpoint: string;
  extra?: Uint8Array;
}

/** The tlog-proof text: header, `index N`, one base64 hash per line, an empty line, the checkpoint. */
export function formatLogProof(p: LogProof): string {
  const extra = p.extra ? `extra ${base64Encode(p.extra)}\n` : '';
  return `${HEADER}\n${extra}index ${p.index}\n${p.path.map((h) => `${base64Encode(h)}\n`).join('')}\n${p.checkpoint}`;
}

/** Parses tlog-proof text; throws a TypeError saying what is wrong. */
export function parseLogProof(text: string): LogProof {
  if (typeof text !== 'string') throw new TypeError('logProof must be a string');
  const cut = text.indexOf('\n\n');
  if (cut < 0) throw new TypeError('logProof has no empty line before its checkpoint');
  const lines = text.slice(0, cut).split('\n');
  if (lines.shift() !== HEADER) throw new TypeError(`logProof must start with ${HEADER}`);
  let extra: Uint8Array | undefined;
  if (lines[0]?.startsWith('extra ')) extra = base64Decode(lines.shift()!.slice(6));
  const m = /^index (0|[1-9][0-9]{0,15})$/.exec(lines.shift() ?? '');
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw new TypeError('logProof needs an "index <N>" line');
  const path = lines.map((l, i) => {
    const h = base64Decode(l);
    if (h.length !== 32) throw new TypeError(`logProof hash line ${i + 1} is not a 32-byte base64 hash`);
    return h;
  });
  if (path.length > 63) throw new TypeError('logProof has more than 63 hashes');
  return { index: Number(m[1]), path, checkpoint: text.slice(cut + 2), ...(extra ? { extra } : {}) };
}

export interface WitnessOptions {
  /** Witness verifier keys the caller pins (c2sp.org/signed-note form: Ed25519 type 0x04 or ML-DSA-44 type 0x06). */
  witnesses?: ReadonlyArray<string>;
  /** Valid cosignatures needed from distinct pinned witnesses (default: all of them). */
  quorum?: number;
}

/** Checks the options (malformed ones throw a TypeError, as verifyBundle's other options do); the quorum to apply. */
export function witnessQuorum(opts: WitnessOptions): number {
  if (opts.witnesses === undefined) {
    if (opts.quorum !== undefined) throw new TypeError('quorum needs witnesses');
    return 0;
  }
  if (!Array.isArray(opts.witnesses) || opts.witnesses.length === 0)
    throw new TypeError('witnesses must be a non-empty array of witness verifier keys');
  opts.witnesses.forEach((v, i) => {
    try {
      parseWitnessKey(v);
    } catch (e) {
      throw new TypeError(`witnesses[${i}] is not a witness verifier key (type 0x04 Ed25519 or 0x06 ML-DSA-44): ${(e as Error).message}`);
    }
  });
  const distinct = new Set(opts.witnesses).size;
  const q = opts.quorum ?? distinct;
  if (!Number.isInteger(q) || q < 1 || q > distinct)
    throw new TypeError(`quorum must be a whole number from 1 to the ${distinct} witnesses given`);
  return q;
}

const run = (name: string, fn: () => [boolean, string]): Check => {
  try {
    const [ok, detail] = fn();
    return { name, ok, detail };
  } catch (err) {
    return { name, ok: false, detail: `could not be checked: ${(err as Error).message}` };
  }
};

/**
 * The checks on `bundle.logProof`: with pinned witnesses it is required; without, a present one is
 * still checked (issuer signature and inclusion). `issuerKeys` are the keys trusted for the log's
 * signature (hex); `leafHash` gives the proof's own leaf hash (hex), computed inside the check.
 */
export function witnessChecks(bundle: Bundle, leafHash: () => string, issuerKeys: ReadonlyArray<string>, opts: WitnessOptions): Check[] {
  const quorum = witnessQuorum(opts);
  if (bundle.logProof === undefined) {
    return quorum === 0
      ? []
      : [
          {
            name: 'checkpoint.witnessed',
            ok: false,
            detail: 'the bundle carries no witnessed checkpoint (logProof): fetch it again from a service that has witnesses',
          },
        ];
  }
  let p: LogProof;
  let cp: ReturnType<typeof parseCheckpoint>;
  try {
    p = parseLogProof(bundle.logProof);
    cp = parseCheckpoint(splitNote(p.checkpoint).text);
  } catch (e) {
    return [{ name: 'checkpoint.format', ok: false, detail: `logProof is malformed: ${(e as Error).message}` }];
  }
  const checks: Check[] = [];
  checks.push(
    run('checkpoint.signature', () => {
      const { signatures } = splitNote(p.checkpoint);
      for (const hex of issuerKeys) {
        const pub = fromHex(hex);
        const id = noteKeyHash(cp.origin, pub);
        if (!signatures.some((s) => s.name === cp.origin && bytesEqual(s.keyId, id))) continue;
        if (verifyNote(p.checkpoint, { name: cp.origin, publicKey: pub, verify }).verified)
          return [true, `the ${cp.size}-leaf checkpoint of ${cp.origin} is signed by issuer key ${hex}`];
      }
      return [false, `the checkpoint of ${cp.origin} carries no valid signature by a trusted issuer key`];
    }),
  );
  checks.push(
    run('checkpoint.inclusion', () => {
      if (p.index !== bundle.inclusion.leafIndex)
        return [false, `logProof index ${p.index} is not the proof's leaf ${bundle.inclusion.leafIndex}`];
      return verifyInclusion(fromHex(leafHash()), p.index, cp.size, p.path, cp.rootHash)
        ? [true, `the proof is leaf ${p.index} of the ${cp.size}-leaf checkpoint (${p.path.length} path hashes)`]
        : [false, `the logProof path does not lead from the proof at leaf ${p.index} to the checkpoint's root`];
    }),
  );
  if (quorum > 0) {
    checks.push(
      run('checkpoint.cosignatures', () => {
        const { valid, missing } = countCosignatures(p.checkpoint, opts.witnesses!);
        const listed = [
          ...valid.map((v) => `${v.name} cosigned at ${new Date(v.timestamp * 1000).toISOString()}`),
          ...missing.map((m) => `${m.name}: ${m.reason}`),
        ].join('; ');
        return valid.length >= quorum
          ? [true, `${valid.length} of the ${quorum} required witness cosignatures verify (${listed})`]
          : [false, `only ${valid.length} of the ${quorum} required witness cosignatures verify (${listed})`];
      }),
    );
  }
  return checks;
}
