// A witness for tests, written from c2sp.org/tlog-witness (add-checkpoint) and c2sp.org/tlog-cosignature:
// it keeps the latest checkpoint it cosigned per origin and cosigns a new one only when it is signed
// by the log's key and proven consistent with that one. It cosigns with Ed25519 (cosignature/v1, key
// type 0x04) or, in its ML-DSA-44 mode, with ML-DSA-44 (key type 0x06); the ML-DSA message, key ID,
// vkey and signature line are built here from the spec's text, not with the service's code, so the
// two sides are independent. `misbehave` makes it answer the ways a broken or hostile witness might.
import { ml_dsa44 } from '@noble/post-quantum/ml-dsa.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { generateKeyPair, verify } from '@escrow-settlement/protocol/crypto/ed25519';
import { cosign } from '@escrow-settlement/protocol/tlog/cosignature';
import {
  COSIGNATURE_ALG,
  formatVerifierKey,
  parseCheckpoint,
  parseVerifierKey,
  splitNote,
  verifyNote,
} from '@escrow-settlement/protocol/tlog/checkpoint';
import { base64Decode } from '@escrow-settlement/protocol/tlog/encoding';
import { bytesEqual } from '@escrow-settlement/protocol/tlog/hash';
import { verifyConsistency } from '@escrow-settlement/protocol/tlog/verify';

export type Misbehaviour = 'garbage' | 'other-key' | 'other-checkpoint' | 'tampered' | 'huge-409' | 'silent' | 'error-500' | 'oversized';

/** The witness's signature scheme: Ed25519 cosignature/v1 (default) or ML-DSA-44 subtree/v1. */
export type WitnessKind = 'ed25519' | 'mldsa44';

export interface TestWitness {
  name: string;
  kind: WitnessKind;
  /** The witness's verifier key: type 0x04 (Ed25519) or 0x06 (ML-DSA-44). */
  vkey: string;
  /** Latest cosigned size and root per origin. */
  state: Map<string, { size: number; root: Uint8Array }>;
  /** Every request seen: the body and the status answered. */
  seen: Array<{ body: string; status: number }>;
  misbehave: Misbehaviour | null;
  /**
   * A hostile variant: when set and it returns an answer, that answer is sent instead of the
   * witness's own (its state unchanged), e.g. a 409 naming a size it never held, or a 422.
   */
  intercept: ((body: string) => Response | null) | null;
  /** Answers one HTTP request (POST <prefix>/add-checkpoint). */
  fetch(req: Request): Promise<Response>;
  /** Seconds since the epoch for the cosignature timestamp (tests may pin it). */
  now: () => number;
  /** Follows one more log (its Ed25519 verifier key, name = origin). */
  trust(logVkey: string): void;
}

const text = (status: number, body: string, type = 'text/plain; charset=utf-8') =>
  new Response(body, { status, headers: { 'content-type': type } });

// ---- ML-DSA-44 cosignatures, from c2sp.org/tlog-cosignature ("Format", "ML-DSA-44 signed message").

const be64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};
const lengthPrefixed = (s: string) => {
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([Buffer.from([b.length]), b]);
};

/** struct cosigned_message { label[12] "subtree/v1\n\0"; cosigner_name<1..255>; u64 timestamp; log_origin<1..255>; u64 start; u64 end; hash[32] } */
function mldsaMessage(cosigner: string, timestamp: number, origin: string, size: number, root: Uint8Array): Uint8Array {
  return Buffer.concat([
    Buffer.from('subtree/v1\n\0', 'latin1'),
    lengthPrefixed(cosigner),
    be64(timestamp),
    lengthPrefixed(origin),
    be64(0),
    be64(size),
    root,
  ]);
}

/** Key ID: SHA-256(name || "\n" || 0x06 || 1312-byte public key)[:4]. */
const mldsaKeyId = (cosigner: string, publicKey: Uint8Array) =>
  sha256(Buffer.concat([Buffer.from(cosigner, 'utf8'), Buffer.from([0x0a, 0x06]), publicKey])).slice(0, 4);

/** "— <name> base64(key ID || u64 timestamp || 2420-byte signature)\n" (signed-note "Signatures"). */
function mldsaLine(cosigner: string, publicKey: Uint8Array, timestamp: number, signature: Uint8Array): string {
  const blob = Buffer.concat([mldsaKeyId(cosigner, publicKey), be64(timestamp), signature]);
  return `\u2014 ${cosigner} ${blob.toString('base64')}\n`;
}

/** An ML-DSA-44 witness key: the key pair, its vkey (name+hex(key ID)+base64(0x06 || key)) and its signer. */
function mldsaWitness(name: string) {
  const keys = ml_dsa44.keygen();
  const vkey = `${name}+${Buffer.from(mldsaKeyId(name, keys.publicKey)).toString('hex')}+${Buffer.concat([Buffer.from([0x06]), keys.publicKey]).toString('base64')}`;
  /** Pure ML-DSA-44, empty context (noble's default). */
  const sign = (signer: { name: string; publicKey: Uint8Array; secretKey: Uint8Array }, text: string, t: number) => {
    const cp = parseCheckpoint(text);
    const sig = ml_dsa44.sign(mldsaMessage(signer.name, t, cp.origin, cp.size, cp.rootHash), signer.secretKey);
    return mldsaLine(signer.name, signer.publicKey, t, sig);
  };
  return { keys, vkey, sign };
}

/**
 * `logs`: verifier keys (Ed25519, name = origin) of the logs this witness follows; `kind` its
 * signature scheme.
 */
export function createTestWitness(name: string, logs: string[] = [], kind: WitnessKind = 'ed25519'): TestWitness {
  const ed = generateKeyPair();
  const pq = kind === 'mldsa44' ? mldsaWitness(name) : null;
  const keys = pq ? pq.keys : ed;
  const other = pq ? ml_dsa44.keygen() : generateKeyPair();
  /** The cosignature line over checkpoint text `text` at time `t` by `signer`, in this witness's scheme. */
  const cosignLine = (text: string, signer: { name: string; publicKey: Uint8Array; secretKey: Uint8Array }, t: number) =>
    pq ? pq.sign(signer, text, t) : cosign(text, signer, t);
  const logKeys = logs.map((v) => parseVerifierKey(v));
  const w: TestWitness = {
    name,
    kind,
    vkey: pq ? pq.vkey : formatVerifierKey(name, ed.publicKey, COSIGNATURE_ALG),
    state: new Map(),
    seen: [],
    misbehave: null,
    intercept: null,
    now: () => Math.floor(Date.now() / 1000),
    trust: (v) => void logKeys.push(parseVerifierKey(v)),
    async fetch(req) {
      const body = await req.text();
      const res = w.intercept?.(body) ?? (await answer(req, body));
      w.seen.push({ body, status: res.status });
      return res;
    },
  };

  async function answer(req: Request, body: string): Promise<Response> {
    if (req.method !== 'POST' || !new URL(req.url).pathname.endsWith('/add-checkpoint')) return text(404, 'not found\n');
    if (w.misbehave === 'silent')
      return new Promise<Response>((_, reject) => req.signal.addEventListener('abort', () => reject(req.signal.reason)));
    if (w.misbehave === 'error-500') return text(500, 'internal error\n');
    // Request: "old <size>\n", proof lines (base64 hashes), an empty line, the signed checkpoint.
    const cut = body.indexOf('\n\n');
    if (cut < 0) return text(400, 'no empty line after the consistency proof\n');
    const head = body.slice(0, cut).split('\n');
    const note = body.slice(cut + 2);
    const m = /^old (0|[1-9][0-9]*)$/.exec(head[0] ?? '');
    if (!m) return text(400, 'first line must be "old <size>"\n');
    const old = Number(m[1]);
    let proof: Uint8Array[];
    try {
      proof = head.slice(1).map((l) => {
        const h = base64Decode(l);
        if (h.length !== 32) throw new TypeError('hash');
        return h;
      });
    } catch {
      return text(400, 'malformed consistency proof line\n');
    }
    let cpText: string;
    try {
      cpText = splitNote(note).text;
    } catch {
      return text(400, 'malformed checkpoint note\n');
    }
    let cp: ReturnType<typeof parseCheckpoint>;
    try {
      cp = parseCheckpoint(cpText);
    } catch {
      return text(400, 'malformed checkpoint\n');
    }
    const key = logKeys.find((k) => k.name === cp.origin);
    if (!key) return text(404, 'unknown log origin\n');
    if (!verifyNote(note, { name: key.name, publicKey: key.publicKey, verify }).verified)
      return text(403, "the checkpoint is not signed by the log's key\n");
    if (old > cp.size) return text(400, 'old size is larger than the checkpoint\n');
    const known = w.state.get(cp.origin) ?? { size: 0, root: new Uint8Array(32) };
    if (w.misbehave === 'huge-409') return text(409, `${cp.size + 1_000_000}\n`, 'text/x.tlog.size');
    if (old !== known.size) return text(409, `${known.size}\n`, 'text/x.tlog.size');
    if (old === cp.size) {
      if (old !== 0 && !bytesEqual(known.root, cp.rootHash)) return text(409, `${known.size}\n`, 'text/x.tlog.size');
      if (proof.length !== 0) return text(422, 'a proof between equal sizes must be empty\n');
    } else if (old > 0 && !verifyConsistency(old, cp.size, known.root, cp.rootHash, proof)) {
      return text(422, 'the consistency proof does not verify\n');
    } else if (old === 0 && proof.length !== 0) {
      return text(422, 'a proof from size 0 must be empty\n');
    }
    const t = w.now();
    // A misbehaving witness records nothing, so each retry meets the same fault.
    if (w.misbehave === null) w.state.set(cp.origin, { size: cp.size, root: cp.rootHash });
    if (w.misbehave === 'garbage') return text(200, 'this is not a signature line\n');
    // Another key under this witness's name: the line names the other key's ID, so it is not ours.
    if (w.misbehave === 'other-key')
      return text(200, cosignLine(cpText, { name, publicKey: other.publicKey, secretKey: other.secretKey }, t));
    if (w.misbehave === 'other-checkpoint')
      return text(200, cosignLine(cpText.replace(/\n[0-9]+\n/, `\n${cp.size + 1}\n`), { name, ...keys }, t));
    const line = cosignLine(cpText, { name, ...keys }, t);
    if (w.misbehave === 'tampered') return text(200, tamper(line));
    // A good line buried in 40 KB more: over what the service reads of an answer.
    if (w.misbehave === 'oversized') return text(200, `${line}${'x'.repeat(40_000)}\n`);
    return text(200, line);
  }
  return w;
}

/** A tlog-witness 409: the size the witness says it holds (c2sp.org/tlog-witness, text/x.tlog.size). */
export const sizeAnswer = (size: number) => text(409, `${size}\n`, 'text/x.tlog.size');

/** A 422 as a witness answers a checkpoint it finds inconsistent with the one it holds. */
export const inconsistentAnswer = () => text(422, 'the consistency proof does not verify\n');

/** The signature line with one bit of its signature flipped: our key ID and timestamp, a signature that fails. */
export function tamper(line: string): string {
  const at = line.lastIndexOf(' ') + 1;
  const blob = Buffer.from(line.slice(at).trim(), 'base64');
  blob[12 + ((blob.length - 12) >> 1)] ^= 0x01; // the middle of the signature, past key ID and timestamp
  return `${line.slice(0, at)}${blob.toString('base64')}\n`;
}

/** A fetch that routes each witness's URL prefix to its handler (no sockets). */
export function witnessFetch(routes: Record<string, TestWitness>): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    for (const [prefix, w] of Object.entries(routes)) if (req.url.startsWith(prefix)) return w.fetch(req);
    throw new TypeError(`fetch failed: no route to ${req.url}`);
  }) as typeof fetch;
}
